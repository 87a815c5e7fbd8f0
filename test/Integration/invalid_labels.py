"""Invalid labels (neither ignore_index nor in [0, V)) stop ga-run with a
message that names the argument, the position and the value, exit status 1
and no result written; for both examples, split or not, and for the values
that used to read out of bounds. Labels that the loss does not read (the
first column of tiny_gpt's shifted labels) are not checked. With
--check-labels=false the step runs on clamped reads.

  invalid_labels.py --ga-opt GA_OPT --ga-run GA_RUN --examples DIR --workdir DIR
"""

import argparse
import os
import re
import subprocess

import numpy as np

from ga_scripts.reference_harness import (Checker, compile_with_pipeline,
                                          padded_example_inputs, with_schedule)

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("--ga-opt", "--ga-run", "--examples", "--workdir"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    check = Checker("invalid-labels")
    inputs = padded_example_inputs(np.random.default_rng(7))
    vocab = {"mlp": 64, "tiny_gpt": 32}
    # (example, microbatches): the labels are checked before the split.
    for name, k in (("mlp", 1), ("mlp", 4), ("tiny_gpt", 1), ("tiny_gpt", 2)):
        with open(os.path.join(args.examples, f"{name}.mlir")) as f:
            source = with_schedule(f.read(), name, microbatches=k)
        lowered = os.path.join(args.workdir, f"{name}_k{k}.mlir")
        compile_with_pipeline(args.ga_opt, source, lowered)
        arrays = inputs[name]
        labels_arg = len(arrays) - 1
        v = vocab[name]
        paths = []
        for i, array in enumerate(arrays[:-1]):
            path = os.path.join(args.workdir, f"{name}_arg{i}.npy")
            np.save(path, array)
            paths.append(path)
        cases = [(v, (3, 5)), (-101, (0, 1)), (10**6, (6, 15)),
                 (INT64_MAX, (2, 9)), (INT64_MIN, (5, 2))]
        for value, (b, s) in cases:
            labels = arrays[-1].copy()
            labels[b, s] = value
            # A second invalid label later in row-major order: the first one
            # is reported.
            labels[7, 15] = v + 1
            path = os.path.join(args.workdir, f"{name}_bad.npy")
            np.save(path, labels)
            out = os.path.join(args.workdir, f"out_{name}_{k}_{value}")
            proc = run([args.ga_run, lowered, *paths, path, "--out-dir", out])
            what = f"{name} k={k} label {value} at [{b}, {s}]"
            expected = (f"label {value} at position [{b}, {s}] (flat "
                        f"{b * 16 + s}) of argument #{labels_arg} is outside "
                        f"[0, {v}) and is not ignore_index (-100)")
            check.true(f"{what}: exit 1", proc.returncode == 1,
                       f"exit {proc.returncode}: {proc.stderr}")
            check.true(f"{what}: message", expected in proc.stderr,
                       proc.stderr)
            check.true(f"{what}: no result written", not os.path.exists(out),
                       "the output directory exists")
        if name == "tiny_gpt":
            # Column 0 of the labels is never read by the shifted loss.
            labels = arrays[-1].copy()
            labels[:, 0] = 10**6
            path = os.path.join(args.workdir, f"{name}_col0.npy")
            np.save(path, labels)
            proc = run([args.ga_run, lowered, *paths, path])
            check.true(f"{name} k={k}: labels the loss does not read are not "
                       "checked", proc.returncode == 0, proc.stderr)

    # Unchecked: the reads are clamped, the step runs and its loss is finite.
    mlp = inputs["mlp"]
    paths = []
    for i, array in enumerate(mlp):
        if i == len(mlp) - 1:
            array = array.copy()
            array[3, 5] = 10**6
            array[4, 0] = INT64_MIN
        path = os.path.join(args.workdir, f"unchecked_arg{i}.npy")
        np.save(path, array)
        paths.append(path)
    proc = run([args.ga_run, os.path.join(args.examples, "mlp.mlir"), *paths,
                "--check-labels=false"])
    check.true("--check-labels=false: runs", proc.returncode == 0,
               proc.stderr)
    loss = re.search(r"^loss: (\S+)", proc.stdout, re.M)
    check.true("--check-labels=false: finite loss",
               loss is not None and np.isfinite(float(loss.group(1))),
               proc.stdout)
    check.finish()


if __name__ == "__main__":
    main()
