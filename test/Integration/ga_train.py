"""ga-train runs the steps that ga-run runs, resumes bitwise, and survives a
crash during a checkpoint.

On examples/mlp_train.mlir (the MLP step, clipping and AdamW) and a dataset
of random features with padded labels (some rows all padding):

1. `ga-train --steps 0` writes the initial state; five ga-run steps from it,
   each fed the rows, learning rate (with warm-up) and step number that
   ga-train feeds and the parameters and moments that the previous ga-run
   returned, give bitwise the loss, gradient norm and token count of
   ga-train's log and bitwise its final parameters and moments. (Both run
   the same compiled step: this checks ga-train's feeding of arguments and
   results, the data order, the schedule of the learning rate.)
   `--clip 0.1` gives bitwise ga-run's step on the IR with max_norm 0.1.
   `--init` with the initial parameters as .npy files (and another seed)
   logs the same run.
2. Three steps, then `--resume` up to six, log and final checkpoint bitwise
   those of six uninterrupted steps.
3. A run stopped in the middle of writing the checkpoint of step 4 leaves
   `latest` at step 2, and resuming from it ends bitwise where the
   uninterrupted run ends; its JSON-lines log holds steps 1 to 6 once each
   (the rows after the checkpoint are replaced), with the uninterrupted
   run's losses.
"""

import csv
import json
import os
import subprocess
import sys

import numpy as np

from ga_scripts import checkpoints
from ga_scripts.reference_harness import (Checker, parse_test_args, run_ga_run,
                                          tool_test_parser)

ROWS = 20  # not a multiple of the batch (8): the data wraps around
STEPS = 5
LR, WARMUP = 1e-2, 3


def make_dataset(path, rng):
    os.makedirs(path, exist_ok=True)
    x = rng.standard_normal((ROWS, 16, 32)).astype(np.float32)
    labels = rng.integers(0, 64, (ROWS, 16)).astype(np.int64)
    lengths = rng.integers(0, 17, ROWS)
    lengths[3] = 0  # a row that is all padding
    for row, n in enumerate(lengths):
        labels[row, n:] = -100
    np.save(os.path.join(path, "x.npy"), x)
    np.save(os.path.join(path, "labels.npy"), labels)
    with open(os.path.join(path, "dataset.json"), "w") as f:
        json.dump({"arrays": ["x.npy", "labels.npy"]}, f)
    return x, labels


def ga_train(args, *options, expect=0):
    cmd = [args.ga_train, os.path.join(args.src, "examples", "mlp_train.mlir"),
           "--lr", str(LR), "--warmup", str(WARMUP), "--seed", "7",
           "--print-every", "1", *options]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != expect:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {proc.returncode} "
                 f"(expected {expect}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def read_checkpoint(where):
    """The state arrays of a checkpoint's latest step, by argument number
    (whole, or assembled from the ranks' shards)."""
    state, manifest = checkpoints.read_state(checkpoints.step_dir(where))
    return manifest["step"], state


def log_rows(path):
    """The log without the wall-clock column."""
    return [(r["step"], r["loss"], r["grad_norm"], r["tokens"], r["lr"])
            for r in csv.DictReader(open(path))]


def main():
    parser = tool_test_parser("ga-train", "ga-run")
    args = parse_test_args(parser)
    work = lambda *p: os.path.join(args.workdir, *p)
    check = Checker("ga-train")
    x, labels = make_dataset(work("data"), np.random.default_rng(3))

    # 1. ga-train against ga-run, step by step.
    ga_train(args, "--data", work("data"), "--steps", "0",
             "--checkpoint-dir", work("init"))
    step0, state = read_checkpoint(work("init"))
    check.equal("--steps 0 checkpoints step 0", np.int64(step0), np.int64(0))
    check.true("initial b1 is zeros (train.init)", not state[1].any())
    check.close("initial w1 has the standard deviation of its train.init",
                np.std(state[0]), 1 / np.sqrt(32), rtol=0.1)
    out = ga_train(args, "--data", work("data"), "--steps", str(STEPS),
                   "--log", work("train.csv"), "--checkpoint-dir",
                   work("train"))
    check.true("a progress line per step", out.count("step ") >= STEPS,
               out)
    logged = list(csv.DictReader(open(work("train.csv"))))
    params = [state[0], state[1], state[2]]
    moments = [state[k] for k in range(5, 11)]
    mlir = os.path.join(args.src, "examples", "mlp_train.mlir")
    for step in range(1, STEPS + 1):
        rows = [((step - 1) * 8 + i) % ROWS for i in range(8)]
        lr = np.float32(LR * min(1.0, step / WARMUP))
        inputs = (params + [x[rows], labels[rows]] + moments
                  + [np.array(lr, np.float32), np.array(step, np.int64)])
        results, _ = run_ga_run(args.ga_run, mlir, inputs,
                                work(f"ga-run-step{step}"))
        params, moments = results[0:3], results[3:9]
        loss, norm, tokens = results[9], results[10], results[11]
        if step == 1:
            first_params, first_inputs = params, inputs
        row = logged[step - 1]
        check.equal(f"step {step}: loss", np.float32(float(row["loss"])),
                    loss)
        check.equal(f"step {step}: grad_norm",
                    np.float32(float(row["grad_norm"])), norm)
        check.equal(f"step {step}: tokens", np.int64(int(row["tokens"])),
                    tokens)
    # --init: the same parameters from .npy files, another seed: the same run.
    os.makedirs(work("params"), exist_ok=True)
    for i in range(3):
        np.save(work("params", f"param{i}.npy"), state[i])
    ga_train(args, "--data", work("data"), "--steps", str(STEPS), "--log",
             work("init.csv"), "--init", work("params"), "--seed", "99")
    check.true("--init from the initial parameters: the same log",
               log_rows(work("init.csv")) == log_rows(work("train.csv")))
    # --clip: the IR's max_norm replaced (the first gradient norm is above
    # 0.1, so the clip acts).
    ga_train(args, "--data", work("data"), "--steps", "1", "--clip", "0.1",
             "--checkpoint-dir", work("clip"))
    _, clipped = read_checkpoint(work("clip"))
    with open(mlir) as f:
        source = f.read()
    assert source.count("max_norm = 1.0") == 1
    with open(work("clip.mlir"), "w") as f:
        f.write(source.replace("max_norm = 1.0", "max_norm = 0.1"))
    reference, _ = run_ga_run(args.ga_run, work("clip.mlir"), first_inputs,
                              work("ga-run-clip"))
    for k in range(3):
        check.equal(f"--clip 0.1: parameter #{k} as with max_norm = 0.1",
                    clipped[k], reference[k])
    check.true("--clip 0.1 changes the step",
               any(not np.array_equal(clipped[k], first_params[k])
                   for k in range(3)))
    last, final = read_checkpoint(work("train"))
    check.equal("final checkpoint's step", np.int64(last), np.int64(STEPS))
    for k, value in zip([0, 1, 2, 5, 6, 7, 8, 9, 10], params + moments):
        check.equal(f"final argument #{k}", final[k], value)

    # 2. Resume.
    ga_train(args, "--data", work("data"), "--steps", "6", "--log",
             work("whole.csv"), "--checkpoint-dir", work("whole"))
    ga_train(args, "--data", work("data"), "--steps", "3", "--log",
             work("parts.csv"), "--checkpoint-dir", work("parts"))
    out = ga_train(args, "--data", work("data"), "--steps", "6", "--log",
                   work("parts.csv"), "--checkpoint-dir", work("parts"),
                   "--resume", work("parts"))
    check.true("the resumed run says where it resumed",
               "resumed at step 3" in out, out)
    check.true("resumed log == uninterrupted log (bitwise values)",
               log_rows(work("parts.csv")) == log_rows(work("whole.csv")))
    _, whole = read_checkpoint(work("whole"))
    _, parts = read_checkpoint(work("parts"))
    for k in whole:
        check.equal(f"resumed: argument #{k}", parts[k], whole[k])

    # 3. A crash while the checkpoint of step 4 is written.
    ga_train(args, "--data", work("data"), "--steps", "6", "--checkpoint-dir",
             work("crash"), "--checkpoint-every", "2", "--log",
             work("crash.jsonl"), "--crash-in-checkpoint", "4", expect=86)
    check.true("the crashed run logged steps 1 to 4",
               [json.loads(line)["step"] for line in open(work("crash.jsonl"))]
               == [1, 2, 3, 4])
    latest = open(work("crash", "latest")).read().strip()
    check.true("after the crash, latest is step 2", latest == "step-00000002",
               latest)
    ga_train(args, "--data", work("data"), "--steps", "6", "--checkpoint-dir",
             work("crash"), "--resume", work("crash"), "--log",
             work("crash.jsonl"))
    rows = [json.loads(line) for line in open(work("crash.jsonl"))]
    check.true("resumed from step 2: steps 3 and 4 logged once, 1 to 6 in all",
               [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6],
               str([r["step"] for r in rows]))
    check.true("the JSON lines log holds the uninterrupted run's losses",
               [np.float32(r["loss"]) for r in rows]
               == [np.float32(float(r[1])) for r in log_rows(work("whole.csv"))])
    _, resumed = read_checkpoint(work("crash"))
    for k in whole:
        check.equal(f"resumed after the crash: argument #{k}", resumed[k],
                    whole[k])
    check.finish()


if __name__ == "__main__":
    main()
