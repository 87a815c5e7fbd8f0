"""A train.checkpoint version of each example gives bitwise identical results.

Checkpointing only changes which values the backward pass keeps (the
region's inputs) and which it recomputes: the loss, every gradient and the
valid count must have exactly the same bits as without it. Runs examples/mlp
against test/Integration/Inputs/mlp-checkpointed.mlir (hidden layer
checkpointed) and examples/tiny_gpt against the generator's --checkpoint
variant (every transformer block checkpointed), on the same random inputs,
and the checkpointed steps split into 2 and 4 micro-batches against the full
batch.
"""

import os
import subprocess
import sys

import numpy as np

from ga_scripts.reference_harness import (Checker, TINY_GPT_PARAM_SHAPES,
                                          ga_run_test_args, run_ga_run,
                                          with_schedule)


def main():
    args = ga_run_test_args()
    rng = np.random.default_rng(3)
    check = Checker("checkpoint")

    # The checkpointed files must really checkpoint something.
    gpt_ckpt = os.path.join(args.workdir, "tiny_gpt_checkpointed.mlir")
    with open(gpt_ckpt, "w") as f:
        subprocess.run([sys.executable,
                        os.path.join(args.src, "examples/gen_tiny_gpt.py"),
                        "--checkpoint"], stdout=f, check=True)
    mlp_ckpt = os.path.join(args.src,
                            "test/Integration/Inputs/mlp-checkpointed.mlir")
    for path, want in [(mlp_ckpt, 1), (gpt_ckpt, 2)]:
        with open(path) as f:
            count = f.read().count("train.checkpoint (")
        check.close(f"{os.path.basename(path)}: checkpoint regions", count,
                    want, rtol=0)

    w1 = rng.standard_normal((32, 64)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(64).astype(np.float32) * 0.1
    w2 = rng.standard_normal((64, 64)).astype(np.float32) * 0.3
    x = rng.standard_normal((8, 16, 32)).astype(np.float32)
    labels = rng.integers(0, 64, (8, 16)).astype(np.int64)
    labels[:, 11:] = -100
    mlp_inputs = [w1, b1, w2, x, labels]

    gpt_inputs = [(rng.standard_normal(s) * 0.3).astype(np.float32)
                  for s in TINY_GPT_PARAM_SHAPES]
    tokens = rng.integers(0, 32, (8, 16)).astype(np.int64)
    glabels = rng.integers(0, 32, (8, 16)).astype(np.int64)
    glabels[:, -4:] = -100
    gpt_inputs += [tokens, glabels]

    for name, plain, ckpt, inputs in [
            ("mlp", os.path.join(args.src, "examples/mlp.mlir"), mlp_ckpt,
             mlp_inputs),
            ("tiny_gpt", os.path.join(args.src, "examples/tiny_gpt.mlir"),
             gpt_ckpt, gpt_inputs)]:
        base, _ = run_ga_run(args.ga_run, plain, inputs,
                             os.path.join(args.workdir, name, "plain"))
        with_ckpt, _ = run_ga_run(args.ga_run, ckpt, inputs,
                                  os.path.join(args.workdir, name, "ckpt"))
        check.close(f"{name}: number of results", len(with_ckpt), len(base),
                    rtol=0)
        for i, (a, b) in enumerate(zip(with_ckpt, base)):
            check.equal(f"{name}: result #{i} {a.dtype}{list(a.shape)}", a, b)
        # Checkpoints inside micro-batches: the split re-types the regions,
        # and the results stay the full batch's, bit for bit.
        with open(ckpt) as f:
            source = f.read()
        for k in (2, 4):
            split = os.path.join(args.workdir, f"{name}_ckpt_k{k}.mlir")
            with open(split, "w") as f:
                f.write(with_schedule(source, name, microbatches=k))
            results, _ = run_ga_run(args.ga_run, split, inputs,
                                    os.path.join(args.workdir, name,
                                                 f"ckpt_k{k}"))
            check.close(f"{name} k={k}: number of results", len(results),
                        len(base), rtol=0)
            for i, (a, b) in enumerate(zip(results, base)):
                check.equal(f"{name} checkpointed, k={k}: result #{i} equals "
                            "the full batch's", a, b)
    check.finish()


if __name__ == "__main__":
    main()
