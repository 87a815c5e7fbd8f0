"""Metrics from split steps: a split step returns the summed loss and the
count of correct predictions exactly.

examples/mlp.mlir is extended with two more auxiliary outputs, both sums over
the batch that depend on the parameters:

* the summed token loss (`train.cross_entropy sum`, f32);
* the number of valid tokens whose argmax of the logits equals the label
  (i64), from an argmax generic and a counting reduction.

The step is compiled with microbatches = k for k in {1, 2, 4, 8} and, when
an MPI launcher is given, with data_parallel = r for r in {2, 4} (times k = 2
where r * k <= 8). Checks:

* the full batch (k = 1) against an independent float64 NumPy reference:
  the summed loss within 1e-5 relative, the correct count exactly;
* every split against the full batch: the loss, the gradients, the valid
  count, the summed loss and the correct count with the same bits
  (micro-batches: the metrics accumulate in place in the full batch's
  order) or, across ranks, the counts exactly and the floats within 1e-6.
"""

import os

import numpy as np

from ga_scripts.reference_harness import (Checker, compile_with_pipeline,
                                          mlp_inputs, mpi_launcher,
                                          parse_test_args, run_ga_run,
                                          tool_test_parser, with_schedule)

METRICS = """
    %sum = train.cross_entropy sum %logits, %flat_labels ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>) -> tensor<f32>
    %ninf = arith.constant 0xFF800000 : f32
    %izero = arith.constant 0 : i64
    %em = tensor.empty() : tensor<128xf32>
    %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<128xf32>)
        -> tensor<128xf32>
    %ei = tensor.empty() : tensor<128xi64>
    %fi = linalg.fill ins(%izero : i64) outs(%ei : tensor<128xi64>)
        -> tensor<128xi64>
    %max:2 = linalg.generic {
        indexing_maps = [affine_map<(i, j) -> (i, j)>,
                         affine_map<(i, j) -> (i)>,
                         affine_map<(i, j) -> (i)>],
        iterator_types = ["parallel", "reduction"]}
        ins(%logits : tensor<128x64xf32>)
        outs(%fm, %fi : tensor<128xf32>, tensor<128xi64>) {
    ^bb0(%v: f32, %m: f32, %i: i64):
      %j = linalg.index 1 : index
      %ji = arith.index_cast %j : index to i64
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %ji, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> (tensor<128xf32>, tensor<128xi64>)
    %e0 = tensor.empty() : tensor<i64>
    %z0 = linalg.fill ins(%izero : i64) outs(%e0 : tensor<i64>)
        -> tensor<i64>
    %correct = linalg.generic {
        indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                         affine_map<(i) -> ()>],
        iterator_types = ["reduction"]}
        ins(%max#1, %flat_labels : tensor<128xi64>, tensor<128xi64>)
        outs(%z0 : tensor<i64>) {
    ^bb0(%p: i64, %y: i64, %acc: i64):
      %eq = arith.cmpi eq, %p, %y : i64
      %one = arith.extui %eq : i1 to i64
      %s = arith.addi %acc, %one : i64
      linalg.yield %s : i64
    } -> tensor<i64>
    train.yield %l, %n, %sum, %correct : tensor<f32>, tensor<i64>, tensor<f32>, tensor<i64>
"""


def with_metrics(source):
    """examples/mlp.mlir with the summed loss and the correct count as two
    more auxiliary outputs."""
    edits = [
        ("%loss, %gw1, %gb1, %gw2, %count = train.step",
         "%loss, %gw1, %gb1, %gw2, %count, %sum, %correct = train.step"),
        ("      aux(tensor<i64>) {",
         "      aux(tensor<i64>, tensor<f32>, tensor<i64>) {"),
        ("    train.yield %l, %n : tensor<f32>, tensor<i64>\n", METRICS),
        ("  return %loss, %gw1, %gb1, %gw2, %count\n",
         "  return %loss, %gw1, %gb1, %gw2, %count, %sum, %correct\n"),
        ("        tensor<i64>) {\n  %loss",
         "        tensor<i64>, tensor<f32>, tensor<i64>) {\n  %loss"),
        ("        tensor<i64>\n}", "        tensor<i64>, tensor<f32>,"
         " tensor<i64>\n}"),
    ]
    for old, new in edits:
        assert source.count(old) == 1, f"mlp.mlir: anchor not found: {old!r}"
        source = source.replace(old, new)
    return source


def reference(inputs):
    """The summed loss and the correct count in float64."""
    w1, b1, w2, x, labels = (a.astype(np.float64) if a.dtype != np.int64
                             else a for a in inputs)
    tokens = x.reshape(128, 32)
    hidden = np.maximum(tokens @ w1 + b1, 0.0)
    logits = hidden @ w2
    flat = labels.reshape(128)
    valid = flat != -100
    shifted = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=1)) + logits.max(axis=1)
    picked = logits[np.arange(128), np.where(valid, flat, 0)]
    summed = np.sum(np.where(valid, lse - picked, 0.0))
    top2 = np.sort(logits, axis=1)[:, -2:]
    margin = float(np.min(top2[:, 1] - top2[:, 0]))
    correct = int(np.sum(valid & (np.argmax(logits, axis=1) == flat)))
    return summed, correct, margin


def main():
    parser = tool_test_parser("ga-opt", "ga-run")
    parser.add_argument("--mpirun", default="",
                        help="the launcher command, without -np; the "
                             "data-parallel schedules run only with it")
    args = parse_test_args(parser)
    rng = np.random.default_rng(5)
    check = Checker("metrics")

    # Parameters scaled up so that the argmax predicts some labels: the
    # labels are drawn from the argmax of a perturbed forward pass.
    inputs = mlp_inputs(rng)
    with open(os.path.join(args.src, "examples", "mlp.mlir")) as f:
        source = with_metrics(f.read())
    # Half of the valid labels are the argmax of the logits, so that the
    # correct count is neither 0 nor the valid count.
    w1, b1, w2 = (a.astype(np.float64) for a in inputs[:3])
    logits = (np.maximum(inputs[3].reshape(128, 32) @ w1 + b1, 0) @ w2)
    labels = inputs[4].reshape(128).copy()
    keep = (labels != -100) & (rng.random(128) < 0.5)
    labels[keep] = np.argmax(logits, axis=1)[keep]
    inputs[4] = labels.reshape(8, 16)
    summed, correct, margin = reference(inputs)
    check.true("the reference predicts some but not all valid labels",
               0 < correct < int(np.sum(labels != -100)),
               f"{correct} of {int(np.sum(labels != -100))}")
    # float32 rounding cannot change an argmax decided by this margin.
    check.true("the top two logits of every token are 1e-3 apart",
               margin > 1e-3, f"smallest gap {margin:.2e}")

    schedules = [(1, k) for k in (1, 2, 4, 8)]
    if args.mpirun:
        schedules += [(2, 1), (2, 2), (4, 1), (4, 2)]
    runs = {}
    for r, k in schedules:
        path = os.path.join(args.workdir, f"mlp_r{r}_k{k}.mlir")
        compile_with_pipeline(
            args.ga_opt, with_schedule(source, "mlp", microbatches=k,
                                       data_parallel=r), path)
        runs[r, k], _ = run_ga_run(
            args.ga_run, path, inputs,
            os.path.join(args.workdir, f"mlp_r{r}_k{k}"),
            launcher=mpi_launcher(args.mpirun, r))

    base = runs[1, 1]
    check.close("full batch: summed loss vs float64", base[5], summed,
                rtol=1e-5)
    check.close("full batch: correct count vs NumPy", base[6], correct,
                rtol=0)
    names = ["loss", "grad w1", "grad b1", "grad w2", "valid count",
             "summed loss", "correct count"]
    for (r, k), results in runs.items():
        if (r, k) == (1, 1):
            continue
        check.close(f"r={r} k={k}: number of results", len(results),
                    len(base), rtol=0)
        for name, a, b in zip(names, results, base):
            if r == 1 or a.dtype == np.int64:
                check.equal(f"r={r} k={k}: {name}", a, b)
            else:
                check.close(f"r={r} k={k}: {name}", a, b, rtol=1e-6,
                            atol=1e-7)
    check.finish()


if __name__ == "__main__":
    main()
