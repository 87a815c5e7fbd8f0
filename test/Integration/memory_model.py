"""The memory model (ga/Analysis/BufferMemory.h) against the runtime's count:
for both examples at k = 1, 2, 4 and a generated 4-layer GPT with and
without train.checkpoint regions, with buffers freed after their last use
(ga-release-buffers) and without, `ga-run --report-memory` prints the
measured peak and allocation count of a run and the model's prediction:
they must be equal, byte for byte. Freeing after the last use must lower
every measured peak, and checkpointing must lower the GPT's (it does only
when buffers die early) while the results stay bitwise the same."""

import os
import re
import subprocess
import sys

import numpy as np

from ga_scripts import tiny_gpt
from ga_scripts.reference_harness import (Checker, ga_run_test_args,
                                          padded_example_inputs, run_command,
                                          save_arrays, with_schedule)


def report(ga_run, path, arrays, extra=()):
    out = run_command([ga_run, path, *arrays, "--report-memory", *extra])
    measured = re.search(r"^budget_peak_bytes: (\d+)", out, re.M)
    count = re.search(r"^allocations: (\d+) per run", out, re.M)
    model = re.search(r"^model_peak_bytes: (\d+) .*model_allocations: (\d+)",
                      out, re.M)
    if not (measured and count and model):
        sys.exit(f"FAIL: unexpected ga-run output for {path}:\n{out}")
    return (int(measured.group(1)), int(count.group(1)), int(model.group(1)),
            int(model.group(2)), out)


def main():
    args = ga_run_test_args()
    check = Checker("memory-model")

    def compare(label, path, arrays, extra=()):
        measured, count, model, model_count, out = report(
            args.ga_run, path, arrays, extra)
        print(f"     memory-model: {label}: measured {measured} bytes, "
              f"{count} allocations; model {model}, {model_count}")
        check.close(f"{label}: the model's peak is the measured one", model,
                    measured, rtol=0)
        check.close(f"{label}: the model's allocation count is the measured "
                    "one", model_count, count, rtol=0)
        return measured, out

    def lower(label, low, high):
        check.true(f"{label}: {low} < {high} bytes ({low / high:.2f}x)",
                   low < high)

    inputs = padded_example_inputs(np.random.default_rng(11))
    for name in ("mlp", "tiny_gpt"):
        with open(os.path.join(args.src, "examples", name + ".mlir")) as f:
            source = f.read()
        arrays = save_arrays(inputs[name],
                             os.path.join(args.workdir, f"{name}_arg"))
        for k in (1, 2, 4):
            path = os.path.join(args.workdir, f"{name}_k{k}.mlir")
            with open(path, "w") as f:
                f.write(with_schedule(source, name, microbatches=k))
            early, _ = compare(f"{name} k={k}", path, arrays)
            late, _ = compare(f"{name} k={k} release-buffers=false", path,
                              arrays, ["--release-buffers=false"])
            lower(f"{name} k={k}: freeing after the last use lowers the "
                  "peak", early, late)

    # A deeper GPT, its blocks checkpointed or not.
    sizes = dict(batch=4, seq=16, vocab=32, dim=16, heads=2, ffn=64, layers=4)
    params, tokens, labels = tiny_gpt.inputs(4, 16, 32, 16, 2, 64, 4,
                                             np.random.default_rng(3))
    arrays = []
    for i, a in enumerate(params + [tokens, labels]):
        arrays.append(os.path.join(args.workdir, f"gpt4_arg{i}.npy"))
        np.save(arrays[-1], a)
    peaks, outs = {}, {}
    for checkpoint in (False, True):
        path = os.path.join(args.workdir,
                            f"gpt4{'_checkpoint' if checkpoint else ''}.mlir")
        generate = [sys.executable,
                    os.path.join(args.src, "examples", "gen_tiny_gpt.py")]
        generate += [f"--{key}={value}" for key, value in sizes.items()]
        if checkpoint:
            generate.append("--checkpoint")
        with open(path, "w") as f:
            subprocess.run(generate, stdout=f, check=True)
        label = f"gpt L=4{' checkpointed' if checkpoint else ''}"
        outdir = path[:-5] + "_out"
        peaks[checkpoint], _ = compare(label, path, arrays,
                                       ["--out-dir", outdir])
        count = len([f for f in os.listdir(outdir) if f.startswith("result")])
        outs[checkpoint] = [np.load(os.path.join(outdir, f"result{i}.npy"))
                            for i in range(count)]
    lower("gpt L=4: checkpointing every block lowers the peak", peaks[True],
          peaks[False])
    check.close("gpt L=4: number of results", len(outs[True]),
                len(outs[False]), rtol=0)
    for i, (a, b) in enumerate(zip(outs[True], outs[False])):
        check.equal(f"gpt L=4: result #{i} checkpointed equals plain", a, b)

    # Rematerialization under a budget: every planned step's measured peak
    # is within its budget and its results are the unplanned step's, bit for
    # bit; the smallest feasible budget the planner states is feasible, one
    # byte less is refused with that figure.
    plain = os.path.join(args.workdir, "gpt4.mlir")
    unplanned = peaks[False]
    refused = subprocess.run(
        [args.ga_run, plain, *arrays, "--memory-budget=1000"],
        capture_output=True, text=True)
    smallest = re.search(r"the smallest peak the planner reaches is (\d+) "
                         r"bytes", refused.stderr)
    ok = refused.returncode == 1 and smallest is not None
    check.true(f"a budget of 1000 bytes is refused, stating the smallest "
               f"feasible one:\n{refused.stderr.strip()}", ok)
    if not ok:
        check.finish()
    smallest = int(smallest.group(1))
    lower("gpt L=4: the smallest feasible budget is below the unplanned "
          "peak", smallest, unplanned)
    budgets = [smallest, (smallest + unplanned) // 2,
               (smallest + 3 * unplanned) // 4]
    for budget in budgets:
        outdir = os.path.join(args.workdir, f"gpt4_budget{budget}")
        measured, out = compare(f"gpt L=4 budget {budget}", plain, arrays,
                                [f"--memory-budget={budget}", "--out-dir",
                                 outdir])
        check.true(f"gpt L=4: measured peak {measured} <= budget {budget}",
                   measured <= budget)
        results = [np.load(os.path.join(outdir, f"result{i}.npy"))
                   for i in range(len(outs[False]))]
        for i, (a, b) in enumerate(zip(results, outs[False])):
            check.equal(f"gpt L=4 budget {budget}: result #{i} equals the "
                        "unplanned step's", a, b)
    below = subprocess.run(
        [args.ga_run, plain, *arrays, f"--memory-budget={smallest - 1}"],
        capture_output=True, text=True)
    check.true("one byte below the smallest feasible budget is refused with "
               "it", below.returncode == 1 and
               f"memory budget of {smallest - 1} bytes is infeasible: the "
               f"smallest peak the planner reaches is {smallest} bytes"
               in below.stderr, below.stderr)
    check.finish()


if __name__ == "__main__":
    main()
