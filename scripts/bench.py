#!/usr/bin/python3
"""CPU benchmark of the ga-opt pipeline and of one compiled training step.

For both examples at two batch sizes (the example's own B and 4x B), reports
  * compile: wall time of `ga-opt --ga-pipeline=target=cpu` (median of 3),
  * step:    the CPU step time that `ga-run --repeat N` reports (minimum
             over N runs, after a warm-up run inside ga-run),
  * scalar:  the same step compiled with `vectorize=false` (scalar loops, the
             baseline of the vectorization stage), and the speed-up of the
             vectorized step over it,
  * unchecked: the step compiled with `check-labels=false` (no runtime label
             check), and the check's cost relative to it,
and, as ratios within this run, how each grows from the small to the large
size (the baseline is the small size measured by the same script on the
same machine). Not a test: nothing is asserted.

Rerun: python3 scripts/bench.py [--build build] [--repeat 20]
(needs NumPy: /usr/bin/python3 on Debian with python3-numpy.)
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from ga_scripts.paths import ROOT


def mlp_source(batch):
    with open(os.path.join(ROOT, "examples/mlp.mlir")) as f:
        text = f.read()
    n = batch * 16
    return (text.replace("8x16x32xf32", f"{batch}x16x32xf32")
            .replace("8x16xi64", f"{batch}x16xi64")
            .replace("128x", f"{n}x").replace("tensor<128xi64>",
                                             f"tensor<{n}xi64>"))


def tiny_gpt_source(batch):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples/gen_tiny_gpt.py"),
         "--batch", str(batch)], capture_output=True, text=True,
        check=True).stdout


def mlp_inputs(batch, rng):
    labels = rng.integers(0, 64, (batch, 16))
    labels[:, 12:] = -100
    return [rng.standard_normal(s).astype(np.float32) * 0.2 for s in
            [(32, 64), (64,), (64, 64), (batch, 16, 32)]] + \
        [labels.astype(np.int64)]


def tiny_gpt_inputs(batch, rng):
    shapes = [[32, 16], [16, 16], [2, 16], [2, 16], [2, 16, 48], [2, 16, 16],
              [2, 16], [2, 16], [2, 16, 64], [2, 64], [2, 64, 16], [2, 16],
              [16], [16], [16, 32]]
    labels = rng.integers(0, 32, (batch, 16))
    labels[:, 12:] = -100
    return [(rng.standard_normal(s) * 0.3).astype(np.float32)
            for s in shapes] + \
        [rng.integers(0, 32, (batch, 16)).astype(np.int64),
         labels.astype(np.int64)]


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    ga_opt = os.path.join(args.build, "bin/ga-opt")
    ga_run = os.path.join(args.build, "bin/ga-run")
    rng = np.random.default_rng(0)
    work = tempfile.mkdtemp(prefix="ga-bench-")

    rows = []
    for name, source, inputs, sizes in [
            ("mlp", mlp_source, mlp_inputs, [8, 32]),
            ("tiny_gpt", tiny_gpt_source, tiny_gpt_inputs, [8, 32])]:
        for batch in sizes:
            path = os.path.join(work, f"{name}_b{batch}.mlir")
            with open(path, "w") as f:
                f.write(source(batch))
            compile_s = []
            for _ in range(3):
                start = time.perf_counter()
                subprocess.run([ga_opt, "--ga-pipeline=target=cpu", path,
                                "-o", os.devnull], check=True)
                compile_s.append(time.perf_counter() - start)
            paths = []
            for i, array in enumerate(inputs(batch, rng)):
                paths.append(os.path.join(work, f"{name}_b{batch}_{i}.npy"))
                np.save(paths[-1], array)
            runs = {}
            for mode, flags in (("true", ["--vectorize=true"]),
                                ("false", ["--vectorize=false"]),
                                ("unchecked", ["--check-labels=false"])):
                out = subprocess.run(
                    [ga_run, path, *paths, "--repeat", str(args.repeat + 1),
                     *flags], capture_output=True,
                    text=True, check=True).stdout
                runs[mode] = (
                    float(re.search(r"min ([0-9.]+)\)", out).group(1)),
                    float(re.search(r"loss: (\S+)", out).group(1)))
            rows.append((name, batch, statistics.median(compile_s) * 1e3,
                         runs["true"][0], runs["false"][0], runs["true"][1],
                         runs["false"][1], runs["unchecked"][0]))

    print(f"ga-opt CPU benchmark ({os.uname().machine}, "
          f"{os.cpu_count()} cores; step = min of {args.repeat} runs)")
    print(f"{'example':10} {'B':>4} {'compile ms':>11} {'step ms':>9} "
          f"{'scalar ms':>10} {'speed-up':>9} {'compile x':>10} "
          f"{'step x':>7} {'loss':>9} {'scalar loss':>12} "
          f"{'unchecked ms':>13} {'check cost':>11}")
    base = {}
    for (name, batch, compile_ms, step_ms, scalar_ms, loss, scalar_loss,
         unchecked_ms) in rows:
        base.setdefault(name, (compile_ms, step_ms))
        print(f"{name:10} {batch:>4} {compile_ms:>11.1f} {step_ms:>9.3f} "
              f"{scalar_ms:>10.3f} {scalar_ms / step_ms:>9.2f} "
              f"{compile_ms / base[name][0]:>10.2f} "
              f"{step_ms / base[name][1]:>7.2f} {loss:>9.4f} "
              f"{scalar_loss:>12.4f} {unchecked_ms:>13.3f} "
              f"{step_ms / unchecked_ms - 1:>+10.1%}")
    print("(speed-up: scalar step / vectorized step, same inputs, same run;")
    print(" x: ratio to the same example at its smallest B in this run;")
    print(" check cost: step with the runtime label check / step compiled with")
    print(" check-labels=false, minus 1, same inputs, same run)")


if __name__ == "__main__":
    main()
