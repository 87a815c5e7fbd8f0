"""train-plan-remat's recomputation against the budget.

Plans a 4-layer GPT (B=4, S=16, V=32, D=16, F=64: the one of
memory-model.test) with ga-opt --train-plan-remat at evenly spaced budgets
(eight by default; the lit test takes twenty) from the smallest feasible one (as the planner states it
when one byte is refused) to the unplanned peak. Checks: every planned peak
(the exact memory model's) is within its budget, and a larger budget never
makes the planner recompute more: its bisection, and the windows of
cheaper candidates it measures after it, run over a list of candidate plans
that does not depend on the budget, so the share of the forward work it
recomputes is monotone in the budget by construction
(tolerance 0; --tolerance loosens it, for experiments with the search).
"""

import os
import re
import subprocess
import sys

from ga_scripts.reference_harness import (Checker, parse_test_args,
                                          tool_test_parser)

SIZE = dict(batch=4, seq=16, vocab=32, dim=16, heads=2, ffn=64, layers=4)
TOLERANCE = 0.0  # points of the recomputed share


def main():
    parser = tool_test_parser("ga-opt")
    parser.add_argument("--budgets", type=int, default=8,
                        help="how many budgets, evenly spaced")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE,
                        help="points of the recomputed share a larger "
                        "budget may add")
    args = parse_test_args(parser)
    check = Checker("remat-monotone")
    path = os.path.join(args.workdir, "gpt4.mlir")
    with open(path, "w") as f:
        subprocess.run([sys.executable,
                        os.path.join(args.src, "examples", "gen_tiny_gpt.py"),
                        *[f"--{k}={v}" for k, v in SIZE.items()]],
                       stdout=f, check=True)

    def plan(budget):
        proc = subprocess.run(
            [args.ga_opt, path, f"--train-plan-remat=memory-budget={budget}",
             "-o", os.devnull], capture_output=True, text=True)
        return proc.returncode, proc.stderr

    rc, err = plan(1)
    smallest = re.search(r"the smallest peak the planner reaches is (\d+)",
                         err)
    check.true("a budget of one byte is refused with the smallest feasible "
               "budget", rc != 0 and smallest is not None, err[-400:])
    if rc == 0 or smallest is None:
        sys.exit(check.finish())
    low = int(smallest.group(1))
    rc, err = plan(10**12)
    top = re.search(r"without new checkpoints (\d+) bytes", err)
    check.true("an unbounded budget is planned and states the unplanned "
               "peak", rc == 0 and top is not None, err[-400:])
    if rc or top is None:
        sys.exit(check.finish())
    high = int(top.group(1))
    budgets = [low + (high - low) * q // args.budgets
               for q in range(args.budgets)]
    previous = None
    for budget in budgets:
        rc, err = plan(budget)
        remark = re.search(r"recomputed ([0-9.]+)% of the forward work\); "
                           r"planned peak (\d+) bytes", err)
        if rc or not remark:
            check.true(f"budget {budget}: planned", False, err[-400:])
            continue
        share, peak = float(remark.group(1)), int(remark.group(2))
        print(f"budget {budget}: recomputed {share}%, planned peak {peak}")
        check.true(f"budget {budget}: planned peak {peak} within it",
                   peak <= budget)
        if previous is not None:
            check.true(f"budget {budget}: recomputes {share}%, at most "
                       f"{previous}% + {args.tolerance} (the smaller "
                       "budget's)", share <= previous + args.tolerance)
        previous = share
    sys.exit(check.finish())


if __name__ == "__main__":
    main()
