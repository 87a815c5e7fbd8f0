"""examples/tiny_gpt.mlir against an independent float64 NumPy model.

1. The example is compiled in float64 (every f32 of the file read as f64) and
   run once: loss and the 15 gradients.
2. The loss is compared with a NumPy float64 forward pass written here from
   the model's definition (no code shared with ga-opt or the generator).
   Tolerance 1e-9 relative: both are float64 evaluations of the same
   function in different orders (error ~1e-14).
3. Every gradient is checked against central finite differences of the NumPy
   forward along a random direction per parameter:
   (L(p + e v) - L(p - e v)) / 2e  vs  <dL/dp, v>, e = 1e-5. The truncation
   error is O(e^2 |L'''|) ~ 1e-10 and rounding ~1e-16 / e ~ 1e-11, so we ask
   for agreement within 1e-6 relative + 1e-9 absolute; a wrong rule gives
   errors of order 1.
4. The float32 example itself: its loss against the float64 NumPy loss
   (rtol 1e-4: float32 through 2 blocks of layer norms and softmaxes), and its
   gradients against the checked float64 gradients (within 1e-3 of the
   largest entry of each gradient: float32 rounding of O(100)-term sums).
"""

import argparse
import math
import os

import numpy as np

from ga_scripts.reference_harness import Checker, run_ga_run
from ga_scripts.tiny_gpt import PARAM_NAMES, param_shapes

B, S, V, D, H, F, L = 8, 16, 32, 16, 2, 64, 2
DH = D // H
EPS = 1e-5
PARAMS = list(zip(PARAM_NAMES, param_shapes(B, S, V, D, H, F, L)))


def erf(x):
    return np.vectorize(math.erf)(x)


def layer_norm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * g + b


def forward(p, tokens, labels):
    x = p["wte"][tokens] + p["wpe"][None, :, :]          # [B, S, D]
    x = x.reshape(B * S, D)
    causal = np.triu(np.ones((S, S), dtype=bool), k=1)   # j > i
    for l in range(L):
        h = layer_norm(x, p["ln1_g"][l], p["ln1_b"][l])
        qkv = h @ p["w_qkv"][l]
        q, k, v = (qkv[:, i * D:(i + 1) * D].reshape(B, S, H, DH)
                   for i in range(3))
        scores = np.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(DH)
        scores = np.where(causal, -1e9, scores)
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        ctx = np.einsum("bhij,bjhd->bihd", probs, v).reshape(B * S, D)
        x = x + ctx @ p["w_o"][l]
        h = layer_norm(x, p["ln2_g"][l], p["ln2_b"][l])
        f = h @ p["w_fc"][l] + p["b_fc"][l]
        f = 0.5 * f * (1.0 + erf(f / math.sqrt(2.0)))
        x = x + f @ p["w_proj"][l] + p["b_proj"][l]
    logits = layer_norm(x, p["lnf_g"], p["lnf_b"]) @ p["w_head"]
    logits = logits.reshape(B, S, V)[:, :-1].reshape(-1, V)
    target = labels[:, 1:].reshape(-1)
    valid = target != -100
    m = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
    picked = logits[np.arange(len(target)), np.where(valid, target, 0)]
    n = valid.sum()
    return float(((lse - picked) * valid).sum() / n) if n else 0.0


def make_inputs(rng):
    """The parameters (float64, by name), tokens and labels (padded tails,
    one sequence entirely padding) the references draw from `rng`."""
    params = {}
    for name, shape in PARAMS:
        if name.endswith("_g"):
            params[name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith("_b") or name.startswith("b_"):
            params[name] = 0.1 * rng.standard_normal(shape)
        else:
            params[name] = rng.standard_normal(shape) / math.sqrt(
                shape[-2] if len(shape) > 1 else 1)
    tokens = rng.integers(0, V, (B, S)).astype(np.int64)
    labels = rng.integers(0, V, (B, S)).astype(np.int64)
    labels[:, -3:] = -100  # padded tails
    labels[2, :] = -100    # one sequence entirely padding
    return params, tokens, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ga-run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--ga-run-arg", action="append", default=[],
                        help="an option of ga-run for both compiles (e.g. "
                             "--attention-key-tile=4)")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    rng = np.random.default_rng(7)
    params, tokens, labels = make_inputs(rng)

    # float64 compile of the same file.
    with open(args.example) as f:
        text64 = f.read().replace("f32", "f64")
    path64 = os.path.join(args.workdir, "tiny_gpt_f64.mlir")
    with open(path64, "w") as f:
        f.write(text64)

    inputs = [params[n] for n, _ in PARAMS] + [tokens, labels]
    res64, _ = run_ga_run(args.ga_run, path64, inputs,
                          os.path.join(args.workdir, "f64"),
                          extra=args.ga_run_arg)
    check = Checker("tiny_gpt")
    loss_ref = forward(params, tokens, labels)
    check.close("float64 loss vs NumPy", res64[0], loss_ref, rtol=1e-9)
    check.close("valid-token count", res64[-1],
                int((labels[:, 1:] != -100).sum()), rtol=0)

    eps = 1e-5
    for i, (name, shape) in enumerate(PARAMS):
        v = rng.standard_normal(shape)
        plus = dict(params, **{name: params[name] + eps * v})
        minus = dict(params, **{name: params[name] - eps * v})
        fd = (forward(plus, tokens, labels) -
              forward(minus, tokens, labels)) / (2 * eps)
        ad = float(np.sum(res64[1 + i] * v))
        check.close(f"d/d{name} along a random direction (FD)", ad, fd,
                    rtol=1e-6, atol=1e-9)

    inputs32 = [params[n].astype(np.float32) for n, _ in PARAMS] + \
        [tokens, labels]
    res32, _ = run_ga_run(args.ga_run, args.example, inputs32,
                          os.path.join(args.workdir, "f32"),
                          extra=args.ga_run_arg)
    params32 = {n: params[n].astype(np.float32).astype(np.float64)
                for n, _ in PARAMS}
    check.close("float32 loss vs NumPy float64", res32[0],
                forward(params32, tokens, labels), rtol=1e-4)
    for i, (name, _) in enumerate(PARAMS):
        ref = res64[1 + i]
        check.close(f"float32 d/d{name} vs checked float64", res32[1 + i],
                    ref, rtol=0, atol=1e-3 * float(np.max(np.abs(ref))))
    check.finish()


if __name__ == "__main__":
    main()
