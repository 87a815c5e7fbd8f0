"""Asserts that a front end puts into a step (cf.assert, as torch-mlir
guards its gathers) never abort the process: train-check-asserts turns them
into checks on the runtime's error path, before the step.

Input: Inputs/asserts/gather-step.mlir, an embedding lookup wte[ids[b, s]]
guarded by two asserts in the body of its generic (id >= 0, id < 16) and a
shape assert at the function level; loss = sum wte[ids] * x.

- Valid ids (0 and 15 among them): the loss and the gradient of wte equal a
  float64 NumPy reference (relative 1e-6) in every configuration: the CPU
  pipeline vectorized and scalar, unfused, split into 2 micro-batches, the
  CUDA device program emulated on the CPU (ga-opt + ga-run), the step
  library (ga-compile + ga-exec) and the Python binding on that library.
- An invalid id: exit status 1 (not a signal), a message that names the
  assert's text, its source location and the first failing position in
  the generic's iterations, no result written; the library returns
  GA_ERROR_ASSERTION (6) to Python, and the next call with valid ids
  succeeds. With two invalid ids (one for each assert), the first check of
  the body reports and counts the other.

  asserts.py --ga-opt BIN --ga-run BIN --ga-compile BIN --ga-exec BIN
             --inputs DIR --python DIR --workdir DIR
"""

import argparse
import os
import subprocess

import numpy as np

from ga_scripts.reference_harness import Checker  # noqa: E402

CONFIGS = {
    "cpu": ("target=cpu", 1),
    "cpu-scalar": ("target=cpu vectorize=false", 1),
    "cpu-unfused": ("target=cpu fuse=false", 1),
    "cpu-k2": ("target=cpu", 2),
    "cuda-emulated": (
        "target=cuda gpu-emulate=true gpu-split-reductions=false", 1),
}
B, S, D, V = 6, 5, 4, 16


def reference(wte, ids, x):
    w, xd = wte.astype(np.float64), x.astype(np.float64)
    loss = (w[ids] * xd).sum()
    grad = np.zeros_like(w)
    np.add.at(grad, ids, xd)
    return [np.array(loss), grad]


def save(workdir, arrays):
    os.makedirs(workdir, exist_ok=True)
    paths = []
    for i, a in enumerate(arrays):
        paths.append(os.path.join(workdir, f"arg{i}.npy"))
        np.save(paths[-1], a)
    return paths


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def results_of(out, count=2):
    return [np.load(os.path.join(out, f"result{i}.npy")) for i in range(count)]


def gather_inputs():
    """The gather's valid arguments (wte, ids with 0 and V - 1 among them,
    x) and the ids with one out of range: V at [2, 3] (also the CUDA kit's,
    scripts/cuda_kit.py)."""
    rng = np.random.default_rng(3)
    wte = rng.standard_normal((V, D)).astype(np.float32)
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    ids = rng.integers(0, V, (B, S)).astype(np.int64)
    ids[0, 0], ids[5, 4] = 0, V - 1
    bad_high = ids.copy()
    bad_high[2, 3] = V
    return wte, ids, x, bad_high


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("--ga-opt", "--ga-run", "--ga-compile", "--ga-exec",
                 "--inputs", "--python", "--workdir"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    check = Checker("asserts")
    wte, ids, x, bad_high = gather_inputs()
    expected = reference(wte, ids, x)
    source_path = os.path.join(args.inputs, "gather-step.mlir")
    with open(source_path) as f:
        source = f.read()

    # (what, ids, message fragments): the first failing check's message.
    bad_low = ids.copy()
    bad_low[4, 1] = -7
    both = bad_high.copy()
    both[4, 1] = -7
    invalid = [
        ("id 16 at [2, 3]", bad_high,
         ["'index must be smaller than dim size' at loc(\"", ":25:7)",
          "over the iterations [6, 5] (dimensions 0, 1 of a linalg.generic"
          " over [6, 5, 4])", f"first at flat position {2 * S + 3}"]),
        ("id -7 at [4, 1]", bad_low,
         ["'index must be larger or equal to 0' at",
          f"first at flat position {4 * S + 1}"]),
        ("two invalid ids", both,
         ["'index must be larger or equal to 0' at",
          "(and 1 more failed check(s))"]),
    ]

    def check_failure(what, proc, out, fragments):
        check.true(f"{what}: exit status 1", proc.returncode == 1,
                   f"exit {proc.returncode}: {proc.stderr}")
        for fragment in fragments:
            check.true(f"{what}: message has {fragment!r}",
                       fragment in proc.stderr, proc.stderr)
        check.true(f"{what}: no result written", not os.path.exists(out),
                   "the output directory exists")

    def check_runs(tag, runner, work):
        """`runner` (a command that takes the arguments' .npy files) on
        valid ids against the reference, then on each invalid case."""
        out = os.path.join(work, "out")
        proc = run([*runner, *save(work, [wte, ids, x]), "--out-dir", out])
        check.true(f"{tag}: valid ids run", proc.returncode == 0, proc.stderr)
        if proc.returncode == 0:
            for i, (g, e) in enumerate(zip(results_of(out), expected)):
                check.close(f"{tag}: valid ids: result {i}", g, e, rtol=1e-6,
                            atol=1e-6 * float(np.max(np.abs(e))))
        for what, bad, fragments in invalid:
            bad_work = os.path.join(work, what.replace(" ", "_"))
            bad_out = os.path.join(bad_work, "out")
            proc = run([*runner, *save(bad_work, [wte, bad, x]),
                        "--out-dir", bad_out])
            check_failure(f"{tag}: {what}", proc, bad_out, fragments)

    for config, (options, k) in CONFIGS.items():
        work = os.path.join(args.workdir, config)
        os.makedirs(work, exist_ok=True)
        step_source = os.path.join(work, "in.mlir")
        with open(step_source, "w") as f:
            f.write(source.replace("microbatches = 1", f"microbatches = {k}"))
        lowered = os.path.join(work, "step.mlir")
        done = run([args.ga_opt, step_source, f"--ga-pipeline={options}",
                    "-o", lowered])
        if done.returncode != 0:
            check.true(f"{config}: compiles", False, done.stderr)
            continue
        with open(lowered) as f:
            text = f.read()
        check.true(f"{config}: no assert or abort left",
                   "cf.assert" not in text and "abort" not in text)
        check_runs(config, [args.ga_run, lowered], work)

    # Ahead of time: the step library, through ga-exec and Python.
    work = os.path.join(args.workdir, "aot")
    os.makedirs(work, exist_ok=True)
    library = os.path.join(work, "libgather.so")
    done = run([args.ga_compile, source_path, "-o", library])
    check.true("aot: compiles", done.returncode == 0, done.stderr)
    if done.returncode == 0:
        check_runs("aot", [args.ga_exec, library], work)
        import ga_step
        step = ga_step.load(library)
        for what, bad, fragments in invalid:
            try:
                step(wte, bad, x)
                check.true(f"python: {what}: raises", False, "no error")
            except ga_step.StepError as e:
                check.true(f"python: {what}: code 6 (GA_ERROR_ASSERTION)",
                           e.code == 6, f"code {e.code}: {e}")
                for fragment in fragments:
                    check.true(f"python: {what}: message has {fragment!r}",
                               fragment in str(e), str(e))
        got = step(wte, ids, x)
        for i, (g, e) in enumerate(zip(got, expected)):
            check.close(f"python: valid ids after the errors: result {i}", g,
                        e, rtol=1e-6, atol=1e-6 * float(np.max(np.abs(e))))
    check.finish()


if __name__ == "__main__":
    main()
