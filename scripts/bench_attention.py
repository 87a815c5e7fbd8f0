#!/usr/bin/python3
"""CPU benchmark of train.attention and its gradient over tiles.

One causal attention's forward and backward pass (train.attention, then
train.attention_grad with the output's cotangent), lowered by
convert-train-to-linalg and run by ga-run on the CPU, float32, at each
--shapes entry B x S x H x D and tile N:

  * as written: the same attention as the seven linalg operations that
    examples/gen_tiny_gpt.py writes and their gradient (train-differentiate
    of the loss sum(out * dout)): the [B, H, S, S] scores and
    probabilities stored;
  * key tiles: the tiles of N keys, every query in one tile
    (query_tile = 0): every key tile visits every query, and the products
    after the diagonal are computed and masked;
  * query and key tiles: tiles of N queries and N keys (query_tile = N):
    only the tiles on and below the diagonal, about half the products at
    S / N tiles.

Each is timed by ga-run (--repeat, minimum run time, one thread and all
cores) in the same run; ratios are to the key tiles. The peak of the
step's buffers (ga-run --report-memory) is printed beside. The results are
compared (loss and gradients within 1e-4 of the written form, relative):
a faster wrong answer is not a result.

Not a test: nothing is asserted but the agreement.

Rerun: python3 scripts/bench_attention.py [--build build] [--repeat 5]
       [--shapes 2x512x4x64,1x1024x4x64] [--tile 64]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from ga_scripts.paths import ROOT


def tiled(b, s, h, d, tile, qtile):
    """The attention and its gradient as the ops, over tiles."""
    q = f"tensor<{b}x{s}x{h}x{d}xf32>"
    r = f"tensor<{b}x{h}x{s}xf32>"
    attrs = (f"scale = {1.0 / d ** 0.5!r} : f64, causal, key_tile = {tile} : "
             f"i64, query_tile = {qtile} : i64")
    return f"""
func.func @step(%q: {q}, %k: {q}, %v: {q}, %do: {q}) -> ({q}, {q}, {q}, {q}) {{
  %o, %lse = train.attention %q, %k, %v {{{attrs}}}
      : ({q}, {q}, {q}) -> ({q}, {r})
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do {{{attrs}}}
      : ({q}, {q}, {q}, {q}, {r}, {q}) -> ({q}, {q}, {q})
  return %o, %dq, %dk, %dv : {q}, {q}, {q}, {q}
}}
"""


def written(b, s, h, d):
    """The generator's seven generics, differentiated by train-differentiate
    through a train.step whose loss is sum(out * dout) (the gradients of
    q, k, v as the step's parameter gradients)."""
    q = f"tensor<{b}x{s}x{h}x{d}xf32>"
    t = f"tensor<{b}x{h}x{s}x{s}xf32>"
    r = f"tensor<{b}x{h}x{s}xf32>"
    scale = f"{1.0 / d ** 0.5:.9e}"
    m5 = "affine_map<(b, h, i, j, d) -> "
    m4 = "affine_map<(b, h, i, j) -> "
    return f"""
func.func @step(%q0: {q}, %k0: {q}, %v0: {q}, %do: {q}) -> (tensor<f32>, {q}, {q}, {q}) {{
  %loss, %g:3 = train.step params(%q0, %k0, %v0 : {q}, {q}, {q}) batch(%do : {q})
      -> tensor<f32> grads({q}, {q}, {q}) {{
  ^bb0(%q: {q}, %k: {q}, %v: {q}, %dout: {q}):
    %zero = arith.constant 0.0 : f32
    %lowest = arith.constant -3.40282347e+38 : f32
    %e0 = tensor.empty() : {t}
    %zs = linalg.fill ins(%zero : f32) outs(%e0 : {t}) -> {t}
    %scores = linalg.generic {{
        indexing_maps = [{m5}(b, i, h, d)>, {m5}(b, j, h, d)>, {m5}(b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}}
        ins(%q, %k : {q}, {q}) outs(%zs : {t}) {{
    ^bb0(%a: f32, %c: f32, %out: f32):
      %p = arith.mulf %a, %c : f32
      %sc = arith.constant {scale} : f32
      %ps = arith.mulf %p, %sc : f32
      %sum = arith.addf %out, %ps : f32
      linalg.yield %sum : f32
    }} -> {t}
    %e1 = tensor.empty() : {t}
    %masked = linalg.generic {{
        indexing_maps = [{m4}(b, h, i, j)>, {m4}(b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
        ins(%scores : {t}) outs(%e1 : {t}) {{
    ^bb0(%a: f32, %out: f32):
      %i = linalg.index 2 : index
      %j = linalg.index 3 : index
      %future = arith.cmpi ugt, %j, %i : index
      %neg = arith.constant -1.0e+09 : f32
      %m = arith.select %future, %neg, %a : f32
      linalg.yield %m : f32
    }} -> {t}
    %er = tensor.empty() : {r}
    %mx0 = linalg.fill ins(%lowest : f32) outs(%er : {r}) -> {r}
    %rowmax = linalg.generic {{
        indexing_maps = [{m4}(b, h, i, j)>, {m4}(b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
        ins(%masked : {t}) outs(%mx0 : {r}) {{
    ^bb0(%a: f32, %out: f32):
      %m = arith.maximumf %a, %out : f32
      linalg.yield %m : f32
    }} -> {r}
    %e2 = tensor.empty() : {t}
    %ex = linalg.generic {{
        indexing_maps = [{m4}(b, h, i, j)>, {m4}(b, h, i)>, {m4}(b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
        ins(%masked, %rowmax : {t}, {r}) outs(%e2 : {t}) {{
    ^bb0(%a: f32, %c: f32, %out: f32):
      %x = arith.subf %a, %c : f32
      %y = math.exp %x : f32
      linalg.yield %y : f32
    }} -> {t}
    %es = tensor.empty() : {r}
    %s0 = linalg.fill ins(%zero : f32) outs(%es : {r}) -> {r}
    %sum = linalg.generic {{
        indexing_maps = [{m4}(b, h, i, j)>, {m4}(b, h, i)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
        ins(%ex : {t}) outs(%s0 : {r}) {{
    ^bb0(%a: f32, %out: f32):
      %y = arith.addf %a, %out : f32
      linalg.yield %y : f32
    }} -> {r}
    %e3 = tensor.empty() : {t}
    %probs = linalg.generic {{
        indexing_maps = [{m4}(b, h, i, j)>, {m4}(b, h, i)>, {m4}(b, h, i, j)>],
        iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
        ins(%ex, %sum : {t}, {r}) outs(%e3 : {t}) {{
    ^bb0(%a: f32, %c: f32, %out: f32):
      %y = arith.divf %a, %c : f32
      linalg.yield %y : f32
    }} -> {t}
    %e4 = tensor.empty() : {q}
    %zo = linalg.fill ins(%zero : f32) outs(%e4 : {q}) -> {q}
    %out = linalg.generic {{
        indexing_maps = [{m5}(b, h, i, j)>, {m5}(b, j, h, d)>, {m5}(b, i, h, d)>],
        iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}}
        ins(%probs, %v : {t}, {q}) outs(%zo : {q}) {{
    ^bb0(%a: f32, %c: f32, %acc: f32):
      %p = arith.mulf %a, %c : f32
      %y = arith.addf %acc, %p : f32
      linalg.yield %y : f32
    }} -> {q}
    %e5 = tensor.empty() : tensor<f32>
    %l0 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<f32>) -> tensor<f32>
    %l = linalg.generic {{
        indexing_maps = [affine_map<(b, i, h, d) -> (b, i, h, d)>, affine_map<(b, i, h, d) -> (b, i, h, d)>, affine_map<(b, i, h, d) -> ()>],
        iterator_types = ["reduction", "reduction", "reduction", "reduction"]}}
        ins(%out, %dout : {q}, {q}) outs(%l0 : tensor<f32>) {{
    ^bb0(%a: f32, %c: f32, %acc: f32):
      %p = arith.mulf %a, %c : f32
      %y = arith.addf %acc, %p : f32
      linalg.yield %y : f32
    }} -> tensor<f32>
    train.yield %l : tensor<f32>
  }}
  return %loss, %g#0, %g#1, %g#2 : tensor<f32>, {q}, {q}, {q}
}}
"""


def run(build, path, inputs, work, repeat, threads, pipeline):
    lowered = path + ".lowered.mlir"
    done = subprocess.run([os.path.join(build, "bin", "ga-opt"), path,
                           f"--ga-pipeline={pipeline}", "-o", lowered],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"ga-opt {path}: {done.stderr[-2000:]}")
    out = os.path.join(work, os.path.basename(path) + f".{threads}.out")
    done = subprocess.run([os.path.join(build, "bin", "ga-run"), lowered,
                           *inputs, "--out-dir", out, f"--repeat={repeat}",
                           f"--num-threads={threads}", "--report-memory"],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"ga-run {path}: {done.stderr[-2000:]}")
    ms = float(re.search(r"run_ms: [0-9.]+ \(mean of \d+, min ([0-9.]+)\)",
                         done.stdout).group(1))
    peak = int(re.search(r"step_peak_bytes: (\d+)", done.stdout).group(1))
    count = int(re.search(r"wrote (\d+) result", done.stdout).group(1))
    results = [np.load(os.path.join(out, f"result{i}.npy"))
               for i in range(count)]
    return ms, peak, results


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.
                                     RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shapes", default="2x512x4x64,1x1024x4x64")
    parser.add_argument("--tile", type=int, default=64)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    rng = np.random.default_rng(0)
    print("| B x S x H x D | tile | threads | as written | key tiles | "
          "query and key tiles | peak: written / key / query and key |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for shape in args.shapes.split(","):
            b, s, h, d = (int(x) for x in shape.split("x"))
            inputs = []
            for i in range(4):
                path = os.path.join(work, f"{shape}.arg{i}.npy")
                np.save(path, rng.standard_normal((b, s, h, d))
                        .astype(np.float32))
                inputs.append(path)
            forms = {"written": written(b, s, h, d),
                     "key": tiled(b, s, h, d, args.tile, 0),
                     "both": tiled(b, s, h, d, args.tile, args.tile)}
            paths = {}
            for name, text in forms.items():
                paths[name] = os.path.join(work, f"{shape}.{name}.mlir")
                with open(paths[name], "w") as f:
                    f.write(text)
            for threads in sorted({1, cores}):
                got = {}
                for name, path in paths.items():
                    pipeline = "target=cpu check-labels=false"
                    got[name] = run(args.build, path, inputs, work,
                                    args.repeat, threads, pipeline)
                # The written form returns the loss first; the tiled forms
                # the output: compare the gradients.
                ref = got["written"][2][1:]
                for name in ("key", "both"):
                    for a, r in zip(got[name][2][1:], ref):
                        err = np.linalg.norm(a - r) / np.linalg.norm(r)
                        if not err <= 1e-4:
                            sys.exit(f"{shape} {name}: a gradient differs "
                                     f"by {err:.2e} from the written form")
                key_ms = got["key"][0]
                cells = [f"{got[n][0]:.1f} ms ({got[n][0] / key_ms:.2f}x)"
                         for n in ("written", "key", "both")]
                peaks = " / ".join(f"{got[n][1] / 2**20:.1f} MiB"
                                   for n in ("written", "key", "both"))
                print(f"| {shape} | {args.tile} | {threads} | "
                      + " | ".join(cells) + f" | {peaks} |", flush=True)


if __name__ == "__main__":
    main()
