"""Budgets on deep GPTs: the planned step fits, measured.

For a GPT of 12 and 24 layers (small widths: compile time, not size,
grows with depth), runs the unplanned step, then the step planned for a
budget of 60% of its measured peak (ga-run --memory-budget) and for the
same budget with the micro-batch count chosen (--choose-microbatches).
Checks: the measured peak (ga-run budget_peak_bytes: step buffers
+ arguments) is within the budget, the memory model's prediction equals
the measurement, and the results are the unplanned step's, bit for bit.
"""

import os
import re
import subprocess
import sys

import numpy as np

from ga_scripts.reference_harness import (Checker, parse_test_args,
                                          save_arrays, tool_test_parser)
from ga_scripts.tiny_gpt import inputs, write_step

SIZE = dict(batch=4, seq=8, vocab=32, dim=16, heads=2, ffn=32)


def main():
    parser = tool_test_parser("ga-run")
    parser.add_argument("--layers", default="12,24")
    args = parse_test_args(parser)
    check = Checker("deep-budget")

    def run(path, arrays, outdir, extra):
        proc = subprocess.run(
            [args.ga_run, path, *arrays, "--report-memory", "--out-dir",
             outdir, *extra], capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"FAIL deep-budget: ga-run {' '.join(extra)} exited "
                     f"with {proc.returncode}:\n{proc.stderr}")
        peak = int(re.search(r"^budget_peak_bytes: (\d+)", proc.stdout,
                             re.M).group(1))
        model = int(re.search(r"^model_peak_bytes: (\d+)", proc.stdout,
                              re.M).group(1))
        count = int(re.search(r"wrote (\d+) result", proc.stdout).group(1))
        results = [np.load(os.path.join(outdir, f"result{i}.npy"))
                   for i in range(count)]
        return peak, model, results, proc.stderr

    for L in (int(x) for x in args.layers.split(",")):
        size = (*SIZE.values(), L)
        path = write_step(os.path.join(args.workdir, f"gpt{L}.mlir"), size)
        params, tokens, labels = inputs(*size, np.random.default_rng(L))
        arrays = save_arrays(params + [tokens, labels],
                             os.path.join(args.workdir, f"gpt{L}_arg"))
        plain, _, expected, _ = run(path, arrays,
                                    os.path.join(args.workdir, f"{L}_plain"),
                                    [])
        budget = plain * 6 // 10
        for label, extra in [("checkpoints", []),
                             ("choose-microbatches=true", ["--choose-microbatches"])]:
            outdir = os.path.join(args.workdir, f"{L}_{label}")
            peak, model, results, remark = run(
                path, arrays, outdir, [f"--memory-budget={budget}", *extra])
            check.true(f"L={L} {label}: measured peak {peak} <= budget "
                       f"{budget} (unplanned {plain})", peak <= budget)
            check.true(f"L={L} {label}: model {model} == measured {peak}",
                       model == peak)
            planned = re.search(r"remark: (train-plan-remat: .*)", remark)
            print(f"     {planned.group(1) if planned else remark.strip()}")
            for i, (a, b) in enumerate(zip(results, expected)):
                check.equal(f"L={L} {label}: result #{i} equals the "
                            "unplanned step's", a, b)
    check.finish()


if __name__ == "__main__":
    main()
