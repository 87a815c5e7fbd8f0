"""Gradient accumulation is exact: micro-batch splits of both examples give
the full-batch loss, gradients, gradient norm and count, bit for bit.

For examples/mlp and examples/tiny_gpt, with random padding (ragged
sequence tails, and one example whose labels are all -100, so that with
k = 8 one micro-batch has no valid token at all), the step is compiled with
`microbatches = k` for k in {1, 2, 4, 8} (the global batch is B = 8):

* exact mode (the default): every result of every k > 1 has exactly the
  bits of k = 1. This holds by construction on the CPU: the global count is
  computed once, each micro-batch's gradient reductions continue the running
  accumulators in place, and every reduction keeps the order of the
  full-batch loops. A mismatch of even one bit is a failure.
* naive mode (`ga-run --naive`: each micro-batch divides by its own count,
  the sum is divided by k): the loss or the gradients differ from k = 1 by
  more than the 1e-6 relative tolerance that the exact split must meet, for
  every k > 1. This shows that the comparison above can fail: the padding
  makes the per-micro-batch counts unequal.

The full-batch results themselves are checked against independent float64
references by mlp-reference.test and tiny-gpt-reference.test.
"""

import os

import numpy as np

from ga_scripts.reference_harness import (Checker, ga_run_test_args,
                                          padded_example_inputs, printed,
                                          relative_error, run_ga_run,
                                          with_schedule)

def main():
    args = ga_run_test_args()
    rng = np.random.default_rng(11)
    check = Checker("split")

    inputs = padded_example_inputs(rng)

    for name in ("mlp", "tiny_gpt"):
        with open(os.path.join(args.src, "examples", name + ".mlir")) as f:
            source = f.read()
        runs = {}
        for k in (1, 2, 4, 8):
            path = os.path.join(args.workdir, f"{name}_k{k}.mlir")
            with open(path, "w") as f:
                f.write(with_schedule(source, name, microbatches=k))
            for mode, extra in (("exact", ()), ("naive", ("--naive",))):
                if k == 1 and mode == "naive":
                    continue
                runs[k, mode] = run_ga_run(
                    args.ga_run, path, inputs[name],
                    os.path.join(args.workdir, f"{name}_k{k}_{mode}"),
                    extra=extra)
        base, base_out = runs[1, "exact"]
        for k in (2, 4, 8):
            results, out = runs[k, "exact"]
            check.close(f"{name} k={k}: number of results", len(results),
                        len(base), rtol=0)
            for i, (a, b) in enumerate(zip(results, base)):
                check.equal(f"{name} k={k}: result #{i} {a.dtype}"
                            f"{list(a.shape)}", a, b)
            check.close(f"{name} k={k}: printed gradient norm",
                        printed(out, "grad_norm"),
                        printed(base_out, "grad_norm"), rtol=0)
            naive, _ = runs[k, "naive"]
            worst = max(relative_error(a, b) for a, b in
                        zip(naive[:-1], base[:-1]))
            visible = worst > 1e-6
            check.checks += 1
            check.failures += not visible
            print(f"{'ok  ' if visible else 'FAIL'} split: {name} k={k}: "
                  f"naive mode differs from the full batch by {worst:.3e} "
                  f"(relative, worst result), must exceed 1e-06")
    check.finish()


if __name__ == "__main__":
    main()
