"""examples/mlp.mlir against a hand-written float64 NumPy reference.

The reference below shares no code with ga-opt: the forward pass and the
backward pass of the two-layer perceptron and of the masked mean
cross-entropy are written out by hand in float64.

Tolerance: the compiled step runs in float32. Its loss and gradients are
sums of at most 128 * 64 products of O(1) terms; float32 accumulation gives
relative errors around 1e-6 on the large entries. We check
|got - ref| <= 1e-4 * |ref| + 1e-5 * max|ref| per tensor: a hundred times
the expected float32 error, while any wrong rule (a missing term, a wrong
sign, a transposed product, a gradient on an ignored token) moves entries by
far more.
"""

import argparse

import numpy as np

from ga_scripts.reference_harness import Checker, printed, run_ga_run


def reference(w1, b1, w2, x, labels, ignore=-100, operand=lambda a: a):
    """The loss, the gradients and the valid count. `operand` is applied to
    both operands of every matrix product (the identity, or a rounding such
    as the bfloat16 inputs of the CUDA target's gpu-bf16)."""
    def mm(a, b):
        return operand(a) @ operand(b)

    x = x.reshape(-1, x.shape[-1])
    labels = labels.reshape(-1)
    pre = mm(x, w1) + b1
    hidden = np.maximum(pre, 0.0)
    logits = mm(hidden, w2)
    valid = labels != ignore
    n = int(valid.sum())
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    safe = np.where(valid, labels, 0)
    token_loss = -logp[np.arange(len(labels)), safe] * valid
    loss = token_loss.sum() / n if n else 0.0
    # Backward.
    p = np.exp(logp)
    onehot = np.zeros_like(p)
    onehot[np.arange(len(labels)), safe] = 1.0
    dlogits = (p - onehot) * valid[:, None] / (n if n else 1)
    dw2 = mm(hidden.T, dlogits)
    dhidden = mm(dlogits, w2.T)
    dpre = dhidden * (pre > 0)
    dw1 = mm(x.T, dpre)
    db1 = dpre.sum(axis=0)
    return loss, dw1, db1, dw2, n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ga-run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()

    check = Checker("mlp")
    for seed, pad_fraction in [(0, 0.3), (1, 0.0), (2, 0.9)]:
        rng = np.random.default_rng(seed)
        w1 = (rng.standard_normal((32, 64)) * 0.3).astype(np.float32)
        b1 = (rng.standard_normal(64) * 0.1).astype(np.float32)
        w2 = (rng.standard_normal((64, 64)) * 0.3).astype(np.float32)
        x = rng.standard_normal((8, 16, 32)).astype(np.float32)
        labels = rng.integers(0, 64, (8, 16)).astype(np.int64)
        labels[rng.random((8, 16)) < pad_fraction] = -100
        inputs = [w1, b1, w2, x, labels]
        results, stdout = run_ga_run(args.ga_run, args.example, inputs,
                                     f"{args.workdir}/seed{seed}")
        ref = reference(*[a.astype(np.float64) if a.dtype == np.float32
                          else a for a in inputs])
        tag = f"seed {seed}, {int((labels == -100).sum())} padded tokens"
        for name, got, want in zip(["loss", "d/dw1", "d/db1", "d/dw2"],
                                   results[:4], ref[:4]):
            scale = float(np.max(np.abs(want)))
            check.close(f"{tag}: {name}", got, want, rtol=1e-4,
                        atol=1e-5 * scale)
        check.close(f"{tag}: valid count", results[4], ref[4], rtol=0)
        norm = np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2))
                           for g in ref[1:4]))
        check.close(f"{tag}: printed grad_norm", printed(stdout, "grad_norm"),
                    norm, rtol=1e-4)
        check.close(f"{tag}: printed loss", printed(stdout, "loss"), ref[0],
                    rtol=1e-4)
    check.finish()


if __name__ == "__main__":
    main()
