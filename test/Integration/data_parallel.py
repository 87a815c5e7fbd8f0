"""Every factorization of the global batch into ranks x micro-batches gives
the full-batch loss, gradients and gradient norm.

For examples/mlp and examples/tiny_gpt, with random padding (ragged
sequence tails, and one example whose labels are all -100, so that with
r * k = 8 one micro-batch has no valid token at all), the step is compiled
with `data_parallel = r` and `microbatches = k` for every r in {1, 2, 4} and
k in {1, 2, 4, 8} with r * k <= 8 (the global batch is B = 8), and run with
`mpirun -np r ga-run` (r > 1) or plain `ga-run` (r = 1):

* exact mode (the default), against the full-batch run r = k = 1:
  - the loss and the printed global gradient norm within 1e-6 relative;
  - every gradient within 1e-6: ||g - g_full|| / ||g_full||;
  - the valid-token count (an auxiliary output) exactly;
  - micro-batch-only splits (r = 1) bitwise identical.
* naive mode (`--ga-pipeline` option naive: each micro-batch divides by its
  own count, the ranks average): for every split, some result differs from
  the full batch by more than 1e-6, so the comparison above can fail.

Each configuration is compiled once with ga-opt, and every rank runs the
lowered file. The full-batch results themselves are checked against
independent float64 references by mlp-reference.test and
tiny-gpt-reference.test.
"""

import os

import numpy as np

from ga_scripts.reference_harness import (Checker, compile_with_pipeline,
                                          mpi_launcher, mpi_test_parser,
                                          padded_example_inputs, printed,
                                          relative_error, run_ga_run,
                                          with_schedule)

TOLERANCE = 1e-6
FACTORIZATIONS = [(r, k) for r in (1, 2, 4) for k in (1, 2, 4, 8)
                  if r * k <= 8]


def main():
    parser = mpi_test_parser()
    parser.add_argument("--examples", default="mlp,tiny_gpt")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rng = np.random.default_rng(23)
    check = Checker("dp")

    inputs = padded_example_inputs(rng)

    for name in args.examples.split(","):
        with open(os.path.join(args.src, "examples", name + ".mlir")) as f:
            source = f.read()
        runs = {}
        for r, k in FACTORIZATIONS:
            for naive in (False, True):
                if naive and r * k == 1:
                    continue
                tag = f"{name}_r{r}_k{k}_{'naive' if naive else 'exact'}"
                lowered = os.path.join(args.workdir, tag + ".mlir")
                compile_with_pipeline(
                    args.ga_opt, with_schedule(source, name, microbatches=k,
                                               data_parallel=r),
                    lowered, naive)
                launcher = mpi_launcher(args.mpirun, r)
                runs[r, k, naive] = run_ga_run(
                    args.ga_run, lowered, inputs[name],
                    os.path.join(args.workdir, tag), launcher=launcher)
        base, base_out = runs[1, 1, False]
        num_grads = len(base) - 2  # loss, gradients..., count
        for r, k in FACTORIZATIONS:
            if r * k == 1:
                continue
            where = f"{name} r={r} k={k}"
            results, out = runs[r, k, False]
            if len(results) != len(base):
                check.checks += 1
                check.failures += 1
                print(f"FAIL dp: {where}: {len(results)} results, expected "
                      f"{len(base)}")
                continue
            check.relative(f"{where}: loss", results[0], base[0], TOLERANCE)
            for i in range(1, 1 + num_grads):
                check.relative(f"{where}: gradient #{i} "
                               f"{list(base[i].shape)}",
                               results[i], base[i], TOLERANCE)
            check.relative(f"{where}: printed gradient norm",
                           printed(out, "grad_norm"),
                           printed(base_out, "grad_norm"), TOLERANCE)
            check.equal(f"{where}: valid-token count", results[-1], base[-1])
            if r == 1:
                check.equal(f"{where}: all results (micro-batches only)",
                            np.concatenate([a.ravel().view(np.uint8)
                                            for a in results]),
                            np.concatenate([a.ravel().view(np.uint8)
                                            for a in base]))
            naive, _ = runs[r, k, True]
            worst = max(range(1 + num_grads),
                        key=lambda i: relative_error(naive[i], base[i]))
            check.differs(f"{where}: naive mode, worst result #{worst}",
                          naive[worst], base[worst], TOLERANCE)
    check.finish()


if __name__ == "__main__":
    main()
