#!/usr/bin/python3
"""Writes random inputs for examples/mlp.mlir (or a --batch-scaled copy) as
.npy files: w1, b1, w2, x and labels, where about a third of the label
positions are padding (-100), tails of sequences as in real batches.

  mlp_data.py OUT_DIR [--batch B] [--seed S]
"""

import argparse
import os

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.out_dir, exist_ok=True)
    arrays = {
        "w1": rng.standard_normal((32, 64)) * 0.2,
        "b1": rng.standard_normal(64) * 0.1,
        "w2": rng.standard_normal((64, 64)) * 0.2,
        "x": rng.standard_normal((args.batch, 16, 32)),
    }
    for name, value in arrays.items():
        np.save(os.path.join(args.out_dir, f"{name}.npy"),
                value.astype(np.float32))
    labels = rng.integers(0, 64, (args.batch, 16))
    lengths = rng.integers(6, 17, args.batch)  # valid prefix of each row
    labels[np.arange(16)[None, :] >= lengths[:, None]] = -100
    np.save(os.path.join(args.out_dir, "labels.npy"), labels.astype(np.int64))
    print(f"{args.out_dir}: B = {args.batch}, "
          f"{int((labels != -100).sum())} valid tokens of {labels.size}")


if __name__ == "__main__":
    main()
