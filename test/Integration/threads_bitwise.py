"""The step's results are bitwise the same for any number of threads.

ga-parallelize-loops runs the tile loops over output rows and columns on
OpenMP threads; each result element is computed by one thread, in the order
of the one-thread code, and no reduction is split. So the loss, every
gradient and the count of the tiny GPT step (batch 16, so that its larger
operations are parallel; whole batch and a 4-way micro-batch split) must
have exactly the same bits with 1, 2 and 3 threads as the step compiled
without parallel loops (parallel=false); in precision=bf16-mixed, with 2
threads. The compiled step must really
fork threads (an omp.parallel region), or the test proves nothing.
"""

import os
import subprocess
import sys

import numpy as np

from ga_scripts.reference_harness import (Checker, TINY_GPT_PARAM_SHAPES,
                                          parse_test_args, run_ga_run,
                                          tool_test_parser)


def main():
    parser = tool_test_parser("ga-run", "ga-opt")
    args = parse_test_args(parser)
    rng = np.random.default_rng(5)
    check = Checker("threads")

    batch = 16
    source = subprocess.run(
        [sys.executable, os.path.join(args.src, "examples/gen_tiny_gpt.py"),
         "--batch", str(batch)], capture_output=True, text=True,
        check=True).stdout
    whole = os.path.join(args.workdir, "tiny_gpt_b16.mlir")
    with open(whole, "w") as f:
        f.write(source)
    split = os.path.join(args.workdir, "tiny_gpt_b16_k4.mlir")
    anchor = ("      batch(%tokens, %labels : tensor<16x16xi64>, "
              "tensor<16x16xi64>)")
    assert source.count(anchor) == 1, "schedule anchor not found"
    with open(split, "w") as f:
        f.write(source.replace(anchor, anchor + "\n      attributes "
                               "{microbatches = 4 : i64, "
                               "data_parallel = 1 : i64}"))

    lowered = subprocess.run(
        [args.ga_opt, "--ga-pipeline=target=cpu", whole], capture_output=True,
        text=True, check=True).stdout
    check.close("parallel regions in the compiled step",
                min(lowered.count("omp.parallel"), 1), 1, rtol=0)

    inputs = [(rng.standard_normal(s) * 0.3).astype(np.float32)
              for s in TINY_GPT_PARAM_SHAPES]
    tokens = rng.integers(0, 32, (batch, 16)).astype(np.int64)
    labels = rng.integers(0, 32, (batch, 16)).astype(np.int64)
    labels[:, -5:] = -100
    inputs += [tokens, labels]

    # precision=bf16-mixed too: its roundings and products of bfloat16
    # copies are elementwise and per output element as well.
    mixed = ["--precision=bf16-mixed"]
    for name, path, options, counts in [
            ("whole batch", whole, [], [1, 2, 3]),
            ("k = 4", split, [], [1, 2, 3]),
            ("whole batch, bf16-mixed", whole, mixed, [2])]:
        base, _ = run_ga_run(args.ga_run, path, inputs,
                             os.path.join(args.workdir, name, "serial"),
                             extra=["--parallel=false", *options])
        for threads in counts:
            got, _ = run_ga_run(
                args.ga_run, path, inputs,
                os.path.join(args.workdir, name, f"t{threads}"),
                extra=["--num-threads", str(threads), *options])
            check.close(f"{name}, {threads} thread(s): number of results",
                        len(got), len(base), rtol=0)
            for i, (a, b) in enumerate(zip(got, base)):
                check.equal(f"{name}, {threads} thread(s): result #{i} "
                            f"{a.dtype}{list(a.shape)}", a, b)
    check.finish()


if __name__ == "__main__":
    main()
