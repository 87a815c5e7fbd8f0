"""A weight read by several matmuls, split into micro-batches.

Its gradient is the sum of four contributions. Differentiation keeps them
apart (four reductions from zero, added once they are complete) and
train-lower-accumulate gives each its own accumulator over the
micro-batches, adding them after the loop: the split steps (k = 2, 4, 8)
equal the full batch bit for bit, and the full batch equals a float64
reference of the same chain (numpy, written out by hand: tanh, matmuls, a
mean token cross-entropy with padding). Also plans the step under a memory budget with
the micro-batch count chosen by train-plan-remat (`--choose-microbatches`):
the measured peak is within the budget and the results are the full
batch's, bit for bit.
"""

import os
import re

import numpy as np

from ga_scripts.reference_harness import Checker, ga_run_test_args, run_ga_run

ANCHOR = "      batch(%x, %labels : tensor<32x16xf32>, tensor<32xi64>)"


def reference(w, x, labels):
    """Loss and dloss/dw in float64."""
    w = w.astype(np.float64)
    h = [x.astype(np.float64)]
    for _ in range(3):
        h.append(np.tanh(h[-1] @ w))
    logits = h[-1] @ w
    valid = labels != -100
    count = valid.sum()
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = np.arange(len(labels))
    safe = np.where(valid, labels, 0)
    loss = -(logp[rows, safe] * valid).sum() / count
    dlogits = np.exp(logp)
    dlogits[rows, safe] -= 1
    dlogits *= valid[:, None] / count
    gw = h[-1].T @ dlogits
    dh = dlogits @ w.T
    for i in range(3, 0, -1):
        dm = dh * (1 - h[i] ** 2)
        gw += h[i - 1].T @ dm
        dh = dm @ w.T
    return loss, gw


def main():
    args = ga_run_test_args()
    check = Checker("shared-weight")
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((16, 16)) * 0.4).astype(np.float32)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    labels = rng.integers(0, 16, 32).astype(np.int64)
    labels[rng.permutation(32)[:9]] = -100
    inputs = [w, x, labels]
    with open(os.path.join(args.src, "test/Integration/Inputs/"
                           "shared-weight.mlir")) as f:
        source = f.read()
    assert source.count(ANCHOR) == 1

    def schedule(k):
        path = os.path.join(args.workdir, f"chain_k{k}.mlir")
        with open(path, "w") as f:
            f.write(source.replace(
                ANCHOR, ANCHOR + f"\n      attributes {{microbatches = {k}"
                " : i64}"))
        return path

    full, _ = run_ga_run(args.ga_run, schedule(1), inputs,
                         os.path.join(args.workdir, "k1"))
    loss, gw = reference(w, x, labels)
    check.close("full batch: loss against float64", full[0], loss, rtol=1e-5)
    check.close("full batch: gradient against float64", full[1], gw,
                rtol=1e-4, atol=1e-6)
    def same_as_full(label, results):
        for i, (a, b) in enumerate(zip(results, full)):
            check.equal(f"{label}: result #{i} equals the full batch's", a, b)

    for k in (2, 4, 8):
        split, _ = run_ga_run(args.ga_run, schedule(k), inputs,
                              os.path.join(args.workdir, f"k{k}"))
        same_as_full(f"k={k}", split)

    # The planner chooses k under a budget the full batch does not fit.
    _, out = run_ga_run(args.ga_run, schedule(1), inputs,
                        os.path.join(args.workdir, "peak"),
                        extra=["--report-memory"])
    unplanned = int(re.search(r"^budget_peak_bytes: (\d+)", out, re.M).group(1))
    budget = unplanned * 3 // 4
    planned, out = run_ga_run(
        args.ga_run, schedule(1), inputs, os.path.join(args.workdir, "auto"),
        extra=["--report-memory", f"--memory-budget={budget}",
               "--choose-microbatches"])
    measured = int(re.search(r"^budget_peak_bytes: (\d+)", out, re.M).group(1))
    check.true(f"choose-microbatches=true: measured peak {measured} <= "
               f"budget {budget} (unplanned {unplanned})", measured <= budget)
    same_as_full("choose-microbatches=true", planned)
    check.finish()


if __name__ == "__main__":
    main()
