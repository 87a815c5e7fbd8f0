"""The loss in chunks keeps a split exact.

Both examples at k = 1, 2 and 4 micro-batches, with the LM head and its loss
computed over chunks of rows (ga-run --loss-chunk-rows=8 and 16,
ga-chunk-loss-head) and without: every gradient and the valid count must
have the bits of the unchunked full-batch step, and the loss must be within
a relative 1e-6 of it (the chunks' sums are another grouping of the same
terms). The head's weight gradient is a sum over the rows that each chunk
continues; train-lower-accumulate passes the micro-batches' accumulator
into that sum (the loop adds into its carried value), so the rows are added
in the full batch's order whatever the chunks and micro-batches.
"""

import os

import numpy as np

from ga_scripts.reference_harness import (Checker, ga_run_test_args,
                                          padded_example_inputs, run_ga_run,
                                          with_schedule)


def main():
    args = ga_run_test_args()
    inputs = padded_example_inputs(np.random.default_rng(7))
    check = Checker("chunks")
    for name in ("mlp", "tiny_gpt"):
        with open(os.path.join(args.src, "examples", name + ".mlir")) as f:
            source = f.read()
        reference = None
        for k in (1, 2, 4):
            path = os.path.join(args.workdir, f"{name}_k{k}.mlir")
            with open(path, "w") as f:
                f.write(with_schedule(source, name, microbatches=k))
            for rows in (0, 8, 16):
                got, _ = run_ga_run(
                    args.ga_run, path, inputs[name],
                    os.path.join(args.workdir, f"{name}_k{k}_r{rows}"),
                    extra=[f"--loss-chunk-rows={rows}"])
                if reference is None:
                    reference = got
                    continue
                tag = f"{name} k={k} loss-chunk-rows={rows}"
                check.relative(f"{tag}: loss", got[0], reference[0], 1e-6)
                for i, (a, b) in enumerate(zip(got[1:], reference[1:]), 1):
                    check.equal(f"{tag}: result #{i}", a, b)
    check.finish()


if __name__ == "__main__":
    main()
