#!/usr/bin/python3
"""CPU benchmark of the tiny-GPT training step at four model sizes.

For each size (B, S, V, D, heads, F, layers) of examples/gen_tiny_gpt.py:
  * compile: ga-run's compile stages (ga-opt pipeline, translation to LLVM IR
    with LLVM's optimizer, code generation), in seconds, and ga-compile's
    whole compile time (the same pipeline, LLVM's work spread over the
    cores, the link of the step library);
  * step: the step time (minimum over --repeat runs) with one thread and with
    every core (OpenMP threads over output tiles; bitwise the same results);
  * PyTorch: the same model, data and loss in PyTorch eager (float32,
    torch.set_num_threads(cores)), forward and backward, minimum over the
    same number of runs: the baseline, run in the same script, with the
    PyTorch of the python that runs it (the front end's environment:
    `$(scripts/setup_frontend.sh --locate) scripts/bench_models.py`). Its
    loss is printed beside ga-opt's (they agree to about 5 digits). Where
    PyTorch is not installed, the column says so;
  * ratio: ga-opt step (all cores) / PyTorch step;
  * GFLOP/s and peak: the step's multiply-add FLOPs (3x those of the
    forward contractions) over the step time, and that as a fraction of the
    machine's bound: an FMA loop's measured FLOP/s on one core (compiled
    here with cc -O3 -funroll-loops -march=native) times the cores.
Not a test: nothing is asserted.

Rerun: $PY scripts/bench_models.py [--build build] [--repeat 5]
       [--sizes tiny,small,medium,deep] [--layers24] (adds a 24-layer deep
       model, compile time only matters there)
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from ga_scripts import tiny_gpt
from ga_scripts.paths import ROOT

# The sizes benchmarked (tiny_gpt.SIZES holds the GPU's too).
SIZES = {name: tiny_gpt.SIZES[name]
         for name in ("tiny", "small", "medium", "deep", "deep24")}

FMA_LOOP = r"""
#include <stdio.h>
#include <time.h>
typedef float v16 __attribute__((vector_size(WIDTH * 4)));
int main(void) {
  v16 acc[12], m = {0}, a = {0};
  for (int i = 0; i < WIDTH; ++i) { m[i] = 0.999999f; a[i] = 1e-7f; }
  for (int k = 0; k < 12; ++k) acc[k] = a * (float)k;
  long n = 200000000 / 12;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long i = 0; i < n; ++i)
    for (int k = 0; k < 12; ++k) acc[k] = acc[k] * m + a;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  float s = 0;
  for (int k = 0; k < 12; ++k) for (int i = 0; i < WIDTH; ++i) s += acc[k][i];
  double sec = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  printf("%f %f\n", 2.0 * WIDTH * 12 * n / sec, s);
  return 0;
}
"""


def fma_peak(work):
    """FLOP/s of one core's FMA loop (the best of 8- and 16-lane vectors:
    AVX2 and AVX-512), or None without a C compiler."""
    src = os.path.join(work, "fma.c")
    exe = os.path.join(work, "fma")
    with open(src, "w") as f:
        f.write(FMA_LOOP)
    best = None
    for width in (8, 16):
        try:
            # -O3 -funroll-loops keeps the 12 accumulators in registers
            # (at -O2 they stay in memory, and the loop measures the
            # latency of a store and a load: 6x below the FMA units).
            subprocess.run(["cc", "-O3", "-funroll-loops", "-march=native",
                            "-ffp-contract=fast", f"-DWIDTH={width}", src,
                            "-o", exe], check=True, capture_output=True)
            out = subprocess.run([exe], check=True, capture_output=True,
                                 text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            continue
        best = max(best or 0.0, float(out.split()[0]))
    return best


def torch_step(torch, size, params, tokens, labels, repeat, threads):
    """(min step seconds, loss) of the model in PyTorch eager."""
    torch.set_num_threads(threads)
    p, forward = tiny_gpt.torch_model(
        torch, size, list(params) + [tokens, labels])
    best = math.inf
    for _ in range(repeat + 1):  # the first run warms up
        for t in p:
            t.grad = None
        start = time.perf_counter()
        loss = forward()
        loss.backward()
        best = min(best, time.perf_counter() - start)
    return best, float(loss)


def ga_step(ga_run, path, arrays, work, repeat, threads):
    paths = []
    for i, a in enumerate(arrays):
        paths.append(os.path.join(work, f"arg{i}.npy"))
        np.save(paths[-1], a)
    out = subprocess.run(
        [ga_run, path, *paths, "--repeat", str(repeat + 1), "--num-threads",
         str(threads)], capture_output=True, text=True, check=True).stdout
    stages = re.search(r"compile_stages_ms: pipeline ([0-9.]+), "
                       r"llvm-ir\+optimize ([0-9.]+), codegen ([0-9.]+)", out)
    return (float(re.search(r"min ([0-9.]+)\)", out).group(1)) / 1e3,
            float(re.search(r"loss: (\S+)", out).group(1)),
            [float(stages.group(i)) / 1e3 for i in (1, 2, 3)])


def ga_compile_seconds(ga_compile, path, work):
    """ga-compile's printed compile time of `path`, in seconds."""
    out = subprocess.run(
        [ga_compile, path, "-o", os.path.join(work, "libstep.so")],
        capture_output=True, text=True, check=True).stdout
    return float(re.search(r"compile_ms: ([0-9.]+)", out).group(1)) / 1e3


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="tiny,small,medium,deep")
    parser.add_argument("--layers24", action="store_true")
    args = parser.parse_args()
    names = args.sizes.split(",") + (["deep24"] if args.layers24 else [])
    for name in names:
        if name not in SIZES:
            parser.error(f"--sizes: unknown size '{name}' (known: "
                         f"{', '.join(SIZES)})")
    ga_run = os.path.join(args.build, "bin/ga-run")
    ga_compile = os.path.join(args.build, "bin/ga-compile")
    cores = os.cpu_count()
    work = tempfile.mkdtemp(prefix="ga-bench-models-")
    try:
        import torch
    except ImportError:
        torch = None
    peak = fma_peak(work)
    rng = np.random.default_rng(0)

    rows = []
    for name in names:
        size = SIZES[name]
        print(f"[bench] {name} {size} ...", file=sys.stderr, flush=True)
        path = tiny_gpt.write_step(os.path.join(work, f"{name}.mlir"), size)
        params, tokens, labels = tiny_gpt.inputs(*size, rng)
        arrays = params + [tokens, labels]
        t1, loss, stages = ga_step(ga_run, path, arrays, work, args.repeat, 1)
        tn, _, _ = ga_step(ga_run, path, arrays, work, args.repeat, cores)
        if torch is not None:
            tt, tloss = torch_step(torch, size, params, tokens, labels,
                                   args.repeat, cores)
        else:
            tt, tloss = None, None
        aot = ga_compile_seconds(ga_compile, path, work)
        rows.append((name, size, stages, aot, t1, tn, tt, loss, tloss,
                     tiny_gpt.step_flops(size)))

    print(f"ga-opt CPU benchmark, tiny-GPT step ({os.uname().machine}, "
          f"{cores} cores; step = min of {args.repeat} runs)")
    if peak:
        print(f"machine bound: FMA loop {peak / 1e9:.1f} GFLOP/s per core, "
              f"{peak * cores / 1e9:.1f} GFLOP/s on {cores} cores")
    if torch is None:
        print("note: PyTorch is not installed (run this script with the "
              "front end's python, scripts/setup_frontend.sh --locate); no "
              "baseline column")
    else:
        print(f"baseline: PyTorch {torch.__version__} eager, "
              f"{torch.get_num_threads()} threads, from {sys.executable}")
    print(f"{'model':7} {'B,S,V,D,H,F,L':>26} {'pipeline s':>10} "
          f"{'llvm s':>7} {'codegen s':>9} {'compile s':>9} "
          f"{'ga-compile s':>12} "
          f"{'1 thr ms':>9} {cores:>2} thr ms {'torch ms':>9} {'ratio':>6} "
          f"{'GFLOP/s':>8} {'of peak':>8} {'loss':>9} {'torch loss':>10}")
    for (name, size, stages, aot, t1, tn, tt, loss, tloss, flops) in rows:
        torch_text = f"{tt * 1e3:>9.2f}" if tt else f"{'-':>9}"
        ratio = f"{tn / tt:>6.2f}" if tt else f"{'-':>6}"
        tloss_text = f"{tloss:>10.5f}" if tloss is not None else f"{'-':>10}"
        frac = f"{flops / tn / (peak * cores):>8.1%}" if peak else f"{'-':>8}"
        print(f"{name:7} {','.join(map(str, size)):>26} {stages[0]:>10.2f} "
              f"{stages[1]:>7.2f} {stages[2]:>9.2f} {sum(stages):>9.2f} "
              f"{aot:>12.2f} "
              f"{t1 * 1e3:>9.2f} {tn * 1e3:>9.2f} {torch_text} {ratio} "
              f"{flops / tn / 1e9:>8.2f} {frac} {loss:>9.5f} {tloss_text}")
    print("(compile: ga-run's stages; ga-compile s: the step library's "
          "whole compile; ratio: ga-opt step on all cores / "
          "PyTorch eager step, same model, data and run; of peak: the step's "
          "FLOP/s over the FMA loop's on all cores)")


if __name__ == "__main__":
    main()
