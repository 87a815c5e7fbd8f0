"""A loss with two normalized terms splits bitwise.

examples/mlp.mlir with its loss replaced by the sum of two token means over
two masks of the labels (labels below 32, labels from 32 on): after
train-normalize-loss the loss is s_lo / n_lo + s_hi / n_hi, two sums divided
by two global counts. train-lower-accumulate accumulates s_lo and s_hi in
place and applies the divisions and the addition once, after the loop, so
every micro-batch count k in {2, 4, 8} gives the bits of k = 1 for the loss
and the gradients. The full batch is checked against a float64 reference of
the loss.
"""

import os

import numpy as np

from ga_scripts.reference_harness import (Checker, ga_run_test_args,
                                          mlp_inputs, run_ga_run, with_schedule)

TWO_MASKS = """    %cut = arith.constant 32 : i64
    %ign = arith.constant -100 : i64
    %el = tensor.empty() : tensor<128xi64>
    %masked:2 = linalg.generic {
        indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                         affine_map<(i) -> (i)>],
        iterator_types = ["parallel"]}
        ins(%flat_labels : tensor<128xi64>)
        outs(%el, %el : tensor<128xi64>, tensor<128xi64>) {
    ^bb0(%y: i64, %a: i64, %b: i64):
      %small = arith.cmpi slt, %y, %cut : i64
      %ylo = arith.select %small, %y, %ign : i64
      %yhi = arith.select %small, %ign, %y : i64
      linalg.yield %ylo, %yhi : i64, i64
    } -> (tensor<128xi64>, tensor<128xi64>)
    %l_lo, %n = train.cross_entropy mean %logits, %masked#0
        ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>) -> (tensor<f32>, tensor<i64>)
    %l_hi = train.cross_entropy mean %logits, %masked#1
        ignore_index = -100
        : (tensor<128x64xf32>, tensor<128xi64>) -> tensor<f32>
    %e0 = tensor.empty() : tensor<f32>
    %l = linalg.generic {
        indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>,
                         affine_map<() -> ()>],
        iterator_types = []}
        ins(%l_lo, %l_hi : tensor<f32>, tensor<f32>)
        outs(%e0 : tensor<f32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<f32>
    train.yield %l, %n : tensor<f32>, tensor<i64>
"""


def with_two_masks(source):
    start = source.index("    %l, %n = train.cross_entropy mean")
    end = source.index("    train.yield %l, %n : tensor<f32>, tensor<i64>\n")
    end += len("    train.yield %l, %n : tensor<f32>, tensor<i64>\n")
    return source[:start] + TWO_MASKS + source[end:]


def reference_loss(inputs):
    w1, b1, w2 = (a.astype(np.float64) for a in inputs[:3])
    tokens = inputs[3].astype(np.float64).reshape(128, 32)
    logits = np.maximum(tokens @ w1 + b1, 0.0) @ w2
    flat = inputs[4].reshape(128)
    lse = (np.log(np.exp(logits - logits.max(axis=1, keepdims=True))
                  .sum(axis=1)) + logits.max(axis=1))
    total = 0.0
    for mask in ((flat != -100) & (flat < 32), flat >= 32):
        picked = logits[np.arange(128), np.where(mask, flat, 0)]
        total += np.sum(np.where(mask, lse - picked, 0.0)) / max(mask.sum(), 1)
    return total


def main():
    args = ga_run_test_args()
    rng = np.random.default_rng(17)
    check = Checker("two-masks")
    inputs = mlp_inputs(rng)
    with open(os.path.join(args.src, "examples", "mlp.mlir")) as f:
        source = with_two_masks(f.read())
    runs = {}
    for k in (1, 2, 4, 8):
        path = os.path.join(args.workdir, f"mlp_k{k}.mlir")
        with open(path, "w") as f:
            f.write(with_schedule(source, "mlp", microbatches=k))
        runs[k], _ = run_ga_run(args.ga_run, path, inputs,
                                os.path.join(args.workdir, f"k{k}"),
                                extra=("--check-labels=false",))
    check.close("full batch: loss vs float64", runs[1][0],
                reference_loss(inputs), rtol=1e-5)
    names = ["loss", "grad w1", "grad b1", "grad w2", "count (low labels)"]
    for k in (2, 4, 8):
        for name, a, b in zip(names, runs[k], runs[1]):
            check.equal(f"k={k}: {name}", a, b)
    check.finish()


if __name__ == "__main__":
    main()
