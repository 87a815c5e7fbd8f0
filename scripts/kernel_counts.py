#!/usr/bin/python3
"""Kernels per training step on the CUDA target, against the step's linalg
operations: the table of docs/cuda.md ("Kernels launched per step").

For each step: the linalg operations of the differentiated, bufferized step
(as the CUDA target's mapping receives them without its fusion,
`gpu-fusion=false`: every `linalg.*` operation and `memref.copy`), the
matrix products among them (which run on cuBLAS), and the `gpu.launch_func`
operations of the lowered step with `gpu-fusion=false`, with the fusion but
without its row groups (`gpu-row-fusion=false`), and with everything (the
default), all with the attention as written (`attention=unfused`, the
form whose kernels the table has followed). The last column is what issue 38 asks of the tiny GPT: linalg
operations other than products per kernel, at least 3.

    python3 scripts/kernel_counts.py [--ga-opt build/bin/ga-opt] [--gpt2]

`--gpt2` adds the generator's GPT-2 124M shape at B 8, S 1024 (a minute).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from ga_scripts.paths import ROOT

OPERATION = re.compile(r"^\s*(?:%[^=]*=\s*)?(linalg\.[a-z_]+|memref\.copy)\b")
PRODUCT = re.compile(r"^\s*(?:%[^=]*=\s*)?linalg\.(?:batch_)?matmul\b")


def run(ga_opt, path, options, extra=()):
    command = [ga_opt, path, "--ga-pipeline=" + options, *extra]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("kernel_counts: %s failed:\n%s" % (" ".join(command),
                                                   result.stderr[-2000:]))
    return result


def operations(ga_opt, path):
    """linalg operations (and copies) and products entering the mapping."""
    result = run(ga_opt, path,
                 "target=cuda gpu-format=none check-labels=false "
                 "attention=unfused gpu-fusion=false",
                 ["--mlir-print-ir-before=ga-gpu-gemm-to-blas", "-o",
                  os.devnull])
    total = products = 0
    for line in result.stderr.splitlines():
        match = OPERATION.match(line)
        # linalg.yield and linalg.index belong to an operation's body.
        if not match or match.group(1) in ("linalg.yield", "linalg.index"):
            continue
        total += 1
        products += bool(PRODUCT.match(line))
    return total, products


def kernels(ga_opt, path, options=""):
    result = run(ga_opt, path,
                 "target=cuda gpu-format=none check-labels=false "
                 "attention=unfused " + options)
    return result.stdout.count("gpu.launch_func")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ga-opt",
                        default=os.path.join(ROOT, "build", "bin", "ga-opt"))
    parser.add_argument("--gpt2", action="store_true",
                        help="add GPT-2 124M's shape at B 8, S 1024")
    args = parser.parse_args()
    if not os.path.exists(args.ga_opt):
        sys.exit("kernel_counts: --ga-opt: no such file: %s (build first: "
                 "./scripts/build.sh)" % args.ga_opt)
    steps = [("`examples/%s.mlir`" % name,
              os.path.join(ROOT, "examples", name + ".mlir"))
             for name in ("mlp", "mlp_train", "tiny_gpt", "tiny_gpt_train")]
    with tempfile.TemporaryDirectory() as scratch:
        if args.gpt2:
            path = os.path.join(scratch, "gpt2_124m_b8.mlir")
            with open(path, "w") as out:
                subprocess.run(
                    [sys.executable,
                     os.path.join(ROOT, "examples", "gen_tiny_gpt.py"),
                     "--batch", "8", "--seq", "1024", "--vocab", "50304",
                     "--dim", "768", "--heads", "12", "--ffn", "3072",
                     "--layers", "12"], stdout=out, check=True)
            steps.append(("GPT-2 124M's shape, B 8, S 1024", path))
        print("| step | linalg operations (products) | kernels, "
              "`gpu-fusion=false` | kernels, `gpu-row-fusion=false` | "
              "kernels | operations per kernel, products aside |")
        print("|---|---|---|---|---|---|")
        for name, path in steps:
            start = time.time()
            total, products = operations(args.ga_opt, path)
            unfused = kernels(args.ga_opt, path, "gpu-fusion=false")
            no_rows = kernels(args.ga_opt, path, "gpu-row-fusion=false")
            fused = kernels(args.ga_opt, path)
            print("| %s | %d (%d) | %d | %d | %d | %.1f |" % (
                name, total, products, unfused, no_rows, fused,
                (total - products) / fused), flush=True)
            print("  (%s: %.1f s)" % (name, time.time() - start),
                  file=sys.stderr)


if __name__ == "__main__":
    main()
