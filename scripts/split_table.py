#!/usr/bin/python3
"""The split table of the main job: examples/mlp.mlir on padded data, the
global batch B = 8 split over r data-parallel ranks and k micro-batches
(micro-batches of B/(r*k) examples), compiled the naive way (each
micro-batch divides by its own token count, the sum is divided by k, the
ranks average) and the exact way (ga-opt's default: one global count, ranks
sum), against the full batch (r = k = 1).

  split_table.py DATA_DIR [--ga-run build/bin/ga-run] [--mpirun CMD]

Rows with r > 1 run under `mpirun -np r` (CMD, default `mpirun`, with
`--oversubscribe` and, for root, `--allow-run-as-root` added for Open MPI);
without mpirun they are left out, with a note.

DATA_DIR holds w1, b1, w2, x and labels .npy files (scripts/mlp_data.py).
Reported per configuration: the loss, and the largest relative gradient
error over the parameters, |g - g_full| / |g_full| (2-norms).
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import tempfile

import numpy as np

from ga_scripts.paths import ROOT
ANCHOR = "      batch(%x, %labels : tensor<8x16x32xf32>, tensor<8x16xi64>)"


CONFIGS = [(1, 1), (1, 2), (1, 4), (1, 8), (2, 1), (2, 2), (2, 4), (4, 1),
           (4, 2)]


def launcher(mpirun):
    """The mpirun command as a list, or None when there is none."""
    parts = shlex.split(mpirun)
    if not parts or not shutil.which(parts[0]):
        return None
    version = subprocess.run([parts[0], "--version"], capture_output=True,
                             text=True)
    if re.search(r"Open ?MPI|OpenRTE", version.stdout + version.stderr):
        parts.append("--oversubscribe")
        if os.geteuid() == 0:
            parts.append("--allow-run-as-root")
    return parts


def run(ga_run, source, inputs, out, naive, prefix=()):
    cmd = [*prefix, ga_run, source, *inputs, "--out-dir", out]
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
    parser.add_argument("--mpirun", default="mpirun")
    args = parser.parse_args()
    inputs = [os.path.join(args.data_dir, f"{n}.npy")
              for n in ("w1", "b1", "w2", "x", "labels")]
    with open(os.path.join(ROOT, "examples/mlp.mlir")) as f:
        text = f.read()
    mpirun = launcher(args.mpirun)
    configs = [(r, k) for r, k in CONFIGS if r == 1 or mpirun]
    work = tempfile.mkdtemp(prefix="ga-split-")
    results = {}
    for r, k in configs:
        source = os.path.join(work, f"mlp_r{r}_k{k}.mlir")
        with open(source, "w") as f:
            f.write(text.replace(ANCHOR, ANCHOR + "\n      attributes "
                                 f"{{microbatches = {k} : i64, "
                                 f"data_parallel = {r} : i64}}"))
        prefix = mpirun + ["-np", str(r)] if r > 1 else []
        for naive in (False, True):
            results[r, k, naive] = run(
                args.ga_run, source, inputs,
                os.path.join(work, f"r{r}_k{k}_{naive}"), naive, prefix)
    full_loss, full_grads = results[1, 1, False]
    print(f"{'ranks':>5} {'micro':>5} {'mb size':>7} | {'naive loss':>11} "
          f"{'naive grad err':>14} | {'exact loss':>11} {'exact grad err':>14}")
    for r, k in configs:
        row = []
        for naive in (True, False):
            loss, grads = results[r, k, naive]
            err = max(np.linalg.norm(g - f) / np.linalg.norm(f)
                      for g, f in zip(grads, full_grads))
            row.append((loss, err))
        print(f"{r:>5} {k:>5} {8 // (r * k):>7} | {row[0][0]:>11.7f} "
              f"{row[0][1]:>14.2e} | {row[1][0]:>11.7f} {row[1][1]:>14.2e}")
    print(f"(full batch: loss {full_loss:.7f}; grad err: max over w1, b1, w2 "
          "of |g - g_full| / |g_full|)")
    if not mpirun:
        print(f"(no '{args.mpirun}' found: the rows with several ranks need "
              "mpirun, which scripts/setup.sh installs)")


if __name__ == "__main__":
    main()
