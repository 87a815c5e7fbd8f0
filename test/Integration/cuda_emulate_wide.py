"""The CUDA target's device program at GPT-2 124M's widths, run on the CPU
(gpu-emulate=true), against the CPU pipeline.

One layer of GPT-2 124M's shape (D 768, 12 heads, F 3072, V 50304) over one
sequence of 256 tokens, parameters normal * 0.02 (ga_scripts/tiny_gpt.py's
inputs, from a seed): at these widths the device program splits the
column sums of the bias and gain gradients in 16 chunks of 16 rows (256
rows; ga-gpu-split-reductions' min-threads), the row statistics of the
50304-wide logits and of the attention in 32 lanes, and uses cuBLAS's
entry points for every product (emulated). Every result must be within a
relative norm error of 1e-5 of the CPU pipeline's (another summation
order; measured 1.6e-6), the loss finite.

  cuda_emulate_wide.py --ga-opt BIN --ga-run BIN --src DIR --workdir DIR
"""

import argparse
import os
import subprocess
import sys

import numpy as np

from ga_scripts import tiny_gpt
from ga_scripts.reference_harness import Checker, run_ga_run

SHAPE = dict(batch=1, seq=256, vocab=50304, dim=768, heads=12, ffn=3072,
             layers=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("--ga-opt", "--ga-run", "--src", "--workdir"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    source = os.path.join(args.workdir, "wide.mlir")
    with open(source, "w") as f:
        subprocess.run([sys.executable,
                        os.path.join(args.src, "examples", "gen_tiny_gpt.py"),
                        *[f"--{k}={v}" for k, v in SHAPE.items()]],
                       stdout=f, check=True)
    size = tuple(SHAPE[k] for k in ("batch", "seq", "vocab", "dim", "heads",
                                    "ffn", "layers"))
    params, tokens, labels = tiny_gpt.inputs(
        *size, np.random.default_rng(0), 0.02)
    inputs = params + [tokens, labels]
    results = {}
    for name, pipeline in (("cpu", "target=cpu"),
                           ("emulated", "target=cuda gpu-emulate=true")):
        lowered = os.path.join(args.workdir, name + ".mlir")
        subprocess.run([args.ga_opt, source, f"--ga-pipeline={pipeline}",
                        "-o", lowered], check=True)
        results[name], _ = run_ga_run(args.ga_run, lowered, inputs,
                                      os.path.join(args.workdir, name))
    check = Checker("emulated-wide")
    check.true(f"loss {float(results['cpu'][0]):.6f} is finite",
               bool(np.isfinite(results["cpu"][0])))
    for i, (got, want) in enumerate(zip(results["emulated"],
                                        results["cpu"])):
        check.relative(f"result #{i} {list(want.shape)}", got, want, 1e-5)
    print(f"emulated-wide: {check.checks - check.failures} of "
          f"{check.checks} checks passed")
    sys.exit(1 if check.failures else 0)


if __name__ == "__main__":
    main()
