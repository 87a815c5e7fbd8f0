#!/usr/bin/env python3
"""The gradient-accumulation table of the main job: examples/mlp.mlir on
padded data, the global batch B = 8 split into k micro-batches of B/k
examples, compiled the naive way (each micro-batch divides by its own token
count, the sum is divided by k) and the exact way (ga-opt's default: one
global count), against the full batch (k = 1).

  split_table.py DATA_DIR [--ga-run build/bin/ga-run]

DATA_DIR holds w1, b1, w2, x and labels .npy files (scripts/mlp_data.py).
Reported per configuration: the loss, and the largest relative gradient
error over the parameters, |g - g_full| / |g_full| (2-norms).
"""

import argparse
import os
import re
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANCHOR = "      batch(%x, %labels : tensor<8x16x32xf32>, tensor<8x16xi64>)"


def run(ga_run, source, inputs, out, naive):
    cmd = [ga_run, source, *inputs, "--out-dir", out]
    if naive:
        cmd.append("--naive")
    stdout = subprocess.run(cmd, capture_output=True, text=True,
                            check=True).stdout
    loss = float(re.search(r"^loss: (\S+)", stdout, re.M).group(1))
    grads = [np.load(os.path.join(out, f"result{i}.npy")).astype(np.float64)
             for i in (1, 2, 3)]
    return loss, grads


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("--ga-run", default=os.path.join(ROOT, "build/bin/ga-run"))
    args = parser.parse_args()
    inputs = [os.path.join(args.data_dir, f"{n}.npy")
              for n in ("w1", "b1", "w2", "x", "labels")]
    with open(os.path.join(ROOT, "examples/mlp.mlir")) as f:
        text = f.read()
    work = tempfile.mkdtemp(prefix="ga-split-")
    results = {}
    for k in (1, 2, 4, 8):
        source = os.path.join(work, f"mlp_k{k}.mlir")
        with open(source, "w") as f:
            f.write(text.replace(ANCHOR, ANCHOR + "\n      attributes "
                                 f"{{microbatches = {k} : i64}}"))
        for naive in (False, True):
            results[k, naive] = run(args.ga_run, source, inputs,
                                    os.path.join(work, f"k{k}_{naive}"), naive)
    full_loss, full_grads = results[1, False]
    print(f"{'ranks':>5} {'micro':>5} {'mb size':>7} | {'naive loss':>11} "
          f"{'naive grad err':>14} | {'exact loss':>11} {'exact grad err':>14}")
    for k in (1, 2, 4, 8):
        row = []
        for naive in (True, False):
            loss, grads = results[k, naive]
            err = max(np.linalg.norm(g - f) / np.linalg.norm(f)
                      for g, f in zip(grads, full_grads))
            row.append((loss, err))
        print(f"{1:>5} {k:>5} {8 // k:>7} | {row[0][0]:>11.7f} "
              f"{row[0][1]:>14.2e} | {row[1][0]:>11.7f} {row[1][1]:>14.2e}")
    print(f"(full batch: loss {full_loss:.7f}; grad err: max over w1, b1, w2 "
          "of |g - g_full| / |g_full|)")


if __name__ == "__main__":
    main()
