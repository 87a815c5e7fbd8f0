"""Shared helpers of the integration tests: run ga-run on .npy inputs, read
its results back, and compare with independent float64 references.

Every comparison prints the worst relative error it saw and the tolerance it
was checked against, so a failing run says by how much it failed.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

import numpy as np


# The parameter shapes of examples/tiny_gpt.mlir, in argument order (the
# tests that only compare compiled runs with each other share them;
# tiny_gpt_reference.py keeps its own list so that it shares nothing with
# the generator).
TINY_GPT_PARAM_SHAPES = [
    [32, 16], [16, 16], [2, 16], [2, 16], [2, 16, 48], [2, 16, 16], [2, 16],
    [2, 16], [2, 16, 64], [2, 64], [2, 64, 16], [2, 16], [16], [16], [16, 32]]


# The line of each example's train.step after which its schedule
# attributes go.
SCHEDULE_AFTER = {
    "mlp": "      batch(%x, %labels : tensor<8x16x32xf32>, tensor<8x16xi64>)",
    "tiny_gpt": "      batch(%tokens, %labels : tensor<8x16xi64>, "
                "tensor<8x16xi64>)",
}


def with_schedule(text, name, microbatches=1, data_parallel=1):
    """The example `name` (its source `text`) with the step's schedule set."""
    anchor = SCHEDULE_AFTER[name]
    assert text.count(anchor) == 1, f"{name}: schedule anchor not found"
    return text.replace(
        anchor, anchor + f"\n      attributes {{microbatches = {microbatches}"
        f" : i64, data_parallel = {data_parallel} : i64}}")


def padded_labels(rng, vocab):
    """Labels [8, 16] with ragged padding (-100) at the end of every row and
    one row (5) all padding, so that a split into micro-batches of one
    example has a micro-batch without any valid token."""
    labels = rng.integers(0, vocab, (8, 16)).astype(np.int64)
    for b in range(8):
        labels[b, rng.integers(6, 16):] = -100
    labels[5, :] = -100
    return labels


def mlp_params(rng):
    """Random parameters of examples/mlp.mlir: w1, b1, w2 (float32)."""
    return [rng.standard_normal((32, 64)).astype(np.float32) * 0.3,
            rng.standard_normal(64).astype(np.float32) * 0.1,
            rng.standard_normal((64, 64)).astype(np.float32) * 0.3]


def mlp_inputs(rng):
    """Random arguments of examples/mlp.mlir: mlp_params, the batch
    [8, 16, 32] and padded_labels."""
    return mlp_params(rng) + [
        rng.standard_normal((8, 16, 32)).astype(np.float32),
        padded_labels(rng, 64)]


def padded_example_inputs(rng):
    """Random arguments of examples/mlp.mlir and examples/tiny_gpt.mlir
    (parameters, then the batch, with padded_labels), drawn in that order."""
    mlp = mlp_inputs(rng)
    gpt = [(rng.standard_normal(s) * 0.3).astype(np.float32)
           for s in TINY_GPT_PARAM_SHAPES]
    gpt += [rng.integers(0, 32, (8, 16)).astype(np.int64),
            padded_labels(rng, 32)]
    return {"mlp": mlp, "tiny_gpt": gpt}


def relative_error(a, b):
    """||a - b|| / ||b|| in float64 (the norm of the whole tensor)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def tool_test_parser(*tools):
    """The arguments every test that runs the tools takes: --TOOL for each
    of `tools` (the binaries' paths), --src (the source tree) and --workdir;
    a test adds its own and parses with parse_test_args."""
    parser = argparse.ArgumentParser()
    for tool in tools:
        parser.add_argument("--" + tool, required=True)
    parser.add_argument("--src", required=True)
    parser.add_argument("--workdir", required=True)
    return parser


def parse_test_args(parser):
    """The parsed arguments, the work directory made if missing."""
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    return args


def ga_run_test_args():
    """The arguments of the tests that run ga-run on the examples: --ga-run,
    --src and --workdir (made if missing)."""
    return parse_test_args(tool_test_parser("ga-run"))


def mpi_test_parser():
    """The arguments of the tests that run ga-run under mpirun."""
    parser = tool_test_parser("ga-opt", "ga-run")
    parser.add_argument("--mpirun", required=True,
                        help="the launcher command, without -np")
    return parser


def compile_with_pipeline(ga_opt, source, path, naive=False):
    """Lowers the MLIR text `source` to the LLVM dialect at `path` with
    `ga-opt --ga-pipeline=target=cpu` (naive=true for the naive split), so
    that every rank of an MPI run only JIT-compiles it."""
    with open(path + ".in.mlir", "w") as f:
        f.write(source)
    options = "target=cpu" + (" naive=true" if naive else "")
    cmd = [ga_opt, path + ".in.mlir", f"--ga-pipeline={options}", "-o", path]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {proc.returncode}:\n"
                 f"{proc.stderr}")


def mpi_launcher(mpirun, ranks):
    """The command prefix that runs ga-run on `ranks` ranks: none for one
    rank, `mpirun -np ranks` (mpirun: a command line) otherwise."""
    return shlex.split(mpirun) + ["-np", str(ranks)] if ranks > 1 else []


def save_arrays(arrays, prefix):
    """Saves `arrays` as PREFIX<i>.npy (in argument order); returns their
    paths."""
    paths = []
    for i, a in enumerate(arrays):
        paths.append(f"{prefix}{i}.npy")
        np.save(paths[-1], a)
    return paths


def run_ga_run(ga_run, mlir_file, inputs, workdir, entry=None, extra=(),
               launcher=()):
    """Saves `inputs` (numpy arrays, in argument order) to `workdir`, runs
    ga-run on them (under `launcher`, e.g. an mpirun command, if given) and
    returns (results as a list of arrays, stdout)."""
    os.makedirs(workdir, exist_ok=True)
    paths = save_arrays(inputs, os.path.join(workdir, "arg"))
    out = os.path.join(workdir, "out")
    cmd = [*launcher, ga_run, mlir_file, *paths, "--out-dir", out, *extra]
    if entry:
        cmd += ["--entry", entry]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {proc.returncode}:\n"
                 f"{proc.stdout}{proc.stderr}")
    count = int(re.search(r"wrote (\d+) result", proc.stdout).group(1))
    results = [np.load(os.path.join(out, f"result{i}.npy"))
               for i in range(count)]
    return results, proc.stdout


def run_command(cmd):
    """Runs `cmd` and returns its stdout; exits with a FAIL line (the
    command, its status and output) when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {proc.returncode}:\n"
                 f"{proc.stdout}{proc.stderr}")
    return proc.stdout


def printed(stdout, key):
    """The float that ga-run printed after `key:`."""
    return float(re.search(rf"^{key}: (\S+)", stdout, re.M).group(1))


class Checker:
    """Collects comparisons; `finish` exits non-zero if any failed."""

    def __init__(self, name):
        self.name = name
        self.failures = 0
        self.checks = 0

    def close(self, what, actual, expected, rtol, atol=0.0):
        actual = np.asarray(actual, dtype=np.float64)
        expected = np.asarray(expected, dtype=np.float64)
        self.checks += 1
        if actual.shape != expected.shape:
            print(f"FAIL {self.name}: {what}: shape {actual.shape}, "
                  f"expected {expected.shape}")
            self.failures += 1
            return
        err = np.abs(actual - expected)
        bound = atol + rtol * np.abs(expected)
        worst = float(np.max(err / np.maximum(bound, 1e-300))) if err.size else 0
        ok = bool(np.all(err <= bound)) and np.all(np.isfinite(actual))
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        print(f"{'ok  ' if ok else 'FAIL'} {self.name}: {what}: max abs err "
              f"{float(np.max(err)) if err.size else 0:.3e} (|ref| <= "
              f"{scale:.3e}), {worst:.3f} of the tolerance "
              f"(rtol {rtol:g}, atol {atol:g})")
        if not ok:
            self.failures += 1

    def relative(self, what, actual, expected, tol):
        """||actual - expected|| / ||expected|| <= tol (tensor norms)."""
        self.checks += 1
        err = relative_error(actual, expected)
        ok = err <= tol and bool(np.all(np.isfinite(actual)))
        print(f"{'ok  ' if ok else 'FAIL'} {self.name}: {what}: relative "
              f"error {err:.3e} (tolerance {tol:g})")
        if not ok:
            self.failures += 1

    def differs(self, what, actual, expected, tol):
        """The bug is visible: the relative error exceeds tol."""
        self.checks += 1
        err = relative_error(actual, expected)
        ok = err > tol
        print(f"{'ok  ' if ok else 'FAIL'} {self.name}: {what}: differs by "
              f"{err:.3e} (relative), must exceed {tol:g}")
        if not ok:
            self.failures += 1

    def equal(self, what, actual, expected):
        self.checks += 1
        a, b = np.asarray(actual), np.asarray(expected)
        same = (a.shape == b.shape and a.dtype == b.dtype and
                a.tobytes() == b.tobytes())
        print(f"{'ok  ' if same else 'FAIL'} {self.name}: {what}: "
              f"{'bitwise identical' if same else 'DIFFERENT bits'}")
        if not same:
            self.failures += 1

    def true(self, what, ok, detail=""):
        """A condition that must hold; `detail` is printed when it does not."""
        self.checks += 1
        print(f"{'ok  ' if ok else 'FAIL'} {self.name}: {what}"
              + ("" if ok else f": {detail.strip()}"))
        if not ok:
            self.failures += 1

    def finish(self):
        print(f"{self.name}: {self.checks - self.failures} of {self.checks} "
              f"checks passed")
        sys.exit(1 if self.failures else 0)
