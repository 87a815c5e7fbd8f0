"""train.attention and train.attention_grad, lowered over key tiles (or,
with --attention library, as calls of the runtime's fused attention) and
run by ga-run in float64, against an independent NumPy float64 model.

For each configuration (causal or not, as many keys as queries or not,
value features other than the query's, one tile, tiles of one key, query
tiles larger and smaller than the key tiles, with and
without a cotangent of the log-sum-exp, with a key mask: left padding whose
queries see no key at all, a hidden key in the middle, an example that
hides every key):

- out and lse against NumPy's softmax attention: relative 1e-12 (the same
  function in another order; error ~1e-15);
- dquery, dkey and dvalue against central finite differences of
  L = sum(out * dout) + sum(lse * dlse) in NumPy along a random direction
  per operand: relative 1e-6 + absolute 1e-9 (truncation ~1e-10 at e =
  1e-5); a wrong rule is off by O(1).

With --bf16 (and --attention library): the same programs in float32, run
with precision=bf16-mixed, so that the fused call reads bfloat16 copies of
the operands and writes bfloat16 results (lse float32), against a NumPy
float64 model with bfloat16 roundings where the runtime documents them
(the operands, the probabilities before their product with the values,
the score gradients before theirs with the keys and queries, every result
once): each result within a relative norm error of 2^-8 (one bfloat16
rounding: the float32 arithmetic against float64's moves a few of the
intermediate roundings), and within 2^-5 of the float64 attention without
roundings, from which it must differ by more than 2^-12 (the roundings are
in effect). Why 2^-5: three rounded operands and the rounded
probabilities each add at most u = 2^-9 per factor to a sum of positive
weights, a few u together, and the results' own rounding adds u.
"""

import argparse
import os

import numpy as np

from ga_scripts.reference_harness import Checker, run_ga_run

# name, causal, B, S (queries), T (keys), H, D, E, key_tile, query_tile,
# scale, dlse, key mask (the keys each example shows, or None)
CONFIGS = [
    ("causal_tiles", True, 2, 8, 8, 3, 4, 5, 2, 4, 0.5, True, None),
    ("causal_wide_keys", True, 2, 8, 8, 2, 3, 3, 4, 2, 0.7, True, None),
    ("cross_tiles", False, 2, 4, 6, 2, 3, 5, 3, 2, 0.3, True, None),
    ("causal_one_tile", True, 1, 6, 6, 2, 4, 4, 0, 0, 0.5, False, None),
    ("causal_single_keys", True, 2, 5, 5, 1, 2, 3, 1, 1, 1.0, True, None),
    ("causal_key_mask", True, 2, 8, 8, 3, 4, 5, 2, 1, 0.5, True,
     [[1, 1, 1, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]]),
    ("cross_key_mask", False, 2, 4, 6, 2, 3, 5, 3, 4, 0.3, True,
     [[1, 0, 1, 1, 0, 1], [0, 0, 0, 0, 0, 0]]),
]
MASKED = -1.0e9


def forward(q, k, v, causal, scale, key_mask=None):
    """A score that the key mask hides is the constant MASKED (a row that
    sees no key weighs those keys alike); a key after the query has no part
    in its softmax."""
    s, _ = masked_scores(q, k, causal, scale, key_mask)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(axis=-1, keepdims=True)
    out = np.einsum("bhij,bjhe->bihe", e / total, v)
    lse = (m + np.log(total))[..., 0]
    return out, lse


def masked_scores(q, k, causal, scale, key_mask):
    """The scores [B, H, S, T] with forward()'s masks, and where the key
    mask hides a key."""
    s = np.einsum("bihd,bjhd->bhij", q, k) * scale
    hidden = np.zeros(s.shape, bool)
    if key_mask is not None:
        hidden = np.broadcast_to(~key_mask[:, None, None, :], s.shape)
        s = np.where(hidden, MASKED, s)
    if causal:
        n = q.shape[1]
        s = np.where(np.triu(np.ones((n, n), bool), k=1), -np.inf, s)
    return s, hidden


def bf16(x):
    """x rounded to the nearest bfloat16 (ties to even), as float64."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def rounded(q, k, v, dout, dlse, causal, scale, key_mask):
    """The fused call in bfloat16, in float64 with its roundings: out, lse,
    dq, dk, dv."""
    q, k, v, dout = bf16(q), bf16(k), bf16(v), bf16(dout)
    s, hidden = masked_scores(q, k, causal, scale, key_mask)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    total = p.sum(axis=-1, keepdims=True)
    out = bf16(np.einsum("bhij,bjhe->bihe", bf16(p), v) / np.moveaxis(
        total, 1, 2))
    lse = (m + np.log(total))[..., 0]
    delta = np.einsum("bihe,bihe->bhi", dout, out) - dlse
    p = np.exp(s - lse[..., None])
    dv = bf16(np.einsum("bhij,bihe->bjhe", bf16(p), dout))
    dp = np.einsum("bihe,bjhe->bhij", dout, v)
    ds = np.where(hidden, 0.0, bf16(p * (dp - delta[..., None])))
    dq = bf16(np.einsum("bhij,bjhd->bihd", ds, k) * scale)
    dk = bf16(np.einsum("bhij,bihd->bjhd", ds, q) * scale)
    return out, lse, dq, dk, dv


def program(cfg, ty="f64"):
    name, causal, b, s, t, h, d, e, tile, qtile, scale, dlse, key_mask = cfg
    q = f"tensor<{b}x{s}x{h}x{d}x{ty}>"
    k = f"tensor<{b}x{t}x{h}x{d}x{ty}>"
    v = f"tensor<{b}x{t}x{h}x{e}x{ty}>"
    o = f"tensor<{b}x{s}x{h}x{e}x{ty}>"
    r = f"tensor<{b}x{h}x{s}x{ty}>"
    attrs = (f"scale = {scale!r} : f64, key_tile = {tile} : i64, "
             f"query_tile = {qtile} : i64") + (
        ", causal" if causal else "")
    m = f"tensor<{b}x{t}xi1>"
    extra = (f", %dl: {r}" if dlse else "") + (
        f", %km: {m}" if key_mask else "")
    dl = ", %dl" if dlse else ""
    dlt = f", {r}" if dlse else ""
    km = " key_mask %km" if key_mask else ""
    kmt = f", {m}" if key_mask else ""
    return f"""
func.func @{name}(%q: {q}, %k: {k}, %v: {v}, %do: {o}{extra})
    -> ({o}, {r}, {q}, {k}, {v}) {{
  %o, %lse = train.attention %q, %k, %v{km} {{{attrs}}}
      : ({q}, {k}, {v}{kmt}) -> ({o}, {r})
  %dq, %dk, %dv = train.attention_grad %q, %k, %v, %o, %lse, %do{dl}{km}
      {{{attrs}}} : ({q}, {k}, {v}, {o}, {r}, {o}{dlt}{kmt})
      -> ({q}, {k}, {v})
  return %o, %lse, %dq, %dk, %dv : {o}, {r}, {q}, {k}, {v}
}}
"""


def exact_gradients(q, k, v, dout, dlse, causal, scale, key_mask):
    """dq, dk, dv of sum(out * dout) + sum(lse * dlse) in float64."""
    s, hidden = masked_scores(q, k, causal, scale, key_mask)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    p /= p.sum(axis=-1, keepdims=True)
    out = np.einsum("bhij,bjhe->bihe", p, v)
    dv = np.einsum("bhij,bihe->bjhe", p, dout)
    dp = np.einsum("bihe,bjhe->bhij", dout, v)
    delta = np.einsum("bihe,bihe->bhi", dout, out) - dlse
    ds = np.where(hidden, 0.0, p * (dp - delta[..., None]))
    return [np.einsum("bhij,bjhd->bihd", ds, k) * scale,
            np.einsum("bhij,bihd->bjhd", ds, q) * scale, dv]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ga-run", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--attention", default="tiles",
                        choices=["tiles", "library"])
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    extra = [f"--attention={args.attention}"]
    if args.bf16:
        extra.append("--precision=bf16-mixed")
    os.makedirs(args.workdir, exist_ok=True)
    rng = np.random.default_rng(11)
    check = Checker("attention")
    for cfg in CONFIGS:
        (name, causal, b, s, t, h, d, e, tile, qtile, scale, has_dlse,
         mask) = cfg
        key_mask = None if mask is None else np.array(mask, bool)
        q = rng.standard_normal((b, s, h, d))
        k = rng.standard_normal((b, t, h, d))
        v = rng.standard_normal((b, t, h, e))
        dout = rng.standard_normal((b, s, h, e))
        dlse = rng.standard_normal((b, h, s)) if has_dlse else np.zeros(
            (b, h, s))
        path = os.path.join(args.workdir, name + ".mlir")
        with open(path, "w") as f:
            f.write(program(cfg, "f32" if args.bf16 else "f64"))
        inputs = [q, k, v, dout] + ([dlse] if has_dlse else []) + (
            [key_mask] if mask else [])
        if args.bf16:
            inputs = [x.astype(np.float32) if x.dtype == np.float64 else x
                      for x in inputs]
        got, _ = run_ga_run(args.ga_run, path, inputs,
                            os.path.join(args.workdir, name), extra=extra)
        out, lse = forward(q, k, v, causal, scale, key_mask)
        if args.bf16:
            # The float32 inputs, as float64: what the call rounds.
            q32, k32, v32, do32, dl32 = (x.astype(np.float32).astype(
                np.float64) for x in (q, k, v, dout, dlse))
            want = rounded(q32, k32, v32, do32, dl32, causal, scale,
                           key_mask)
            exact = list(forward(q32, k32, v32, causal, scale, key_mask))
            exact += exact_gradients(q32, k32, v32, do32, dl32, causal,
                                     scale, key_mask)
            names = ["out", "lse", "dquery", "dkey", "dvalue"]
            for i, what in enumerate(names):
                check.relative(f"{name}: {what} vs bf16 roundings", got[i],
                               want[i], 2.0**-8)
                check.relative(f"{name}: {what} vs float64", got[i],
                               exact[i], 2.0**-5)
                if what != "lse" or key_mask is None:
                    check.differs(f"{name}: {what} vs float64", got[i],
                                  exact[i], 2.0**-12)
            continue
        check.close(f"{name}: out", got[0], out, rtol=1e-12)
        check.close(f"{name}: lse", got[1], lse, rtol=1e-12)

        def loss(qq, kk, vv):
            # lse - lse(q, k): a row that sees no key has lse = MASKED +
            # log T, a constant of size 1e9 whose rounding would swamp the
            # differences.
            o, l = forward(qq, kk, vv, causal, scale, key_mask)
            return float(np.sum(o * dout) + np.sum((l - lse) * dlse))

        eps = 1e-5
        operands = [q, k, v]
        for i, what in enumerate(["dquery", "dkey", "dvalue"]):
            direction = rng.standard_normal(operands[i].shape)
            plus = list(operands)
            minus = list(operands)
            plus[i] = operands[i] + eps * direction
            minus[i] = operands[i] - eps * direction
            fd = (loss(*plus) - loss(*minus)) / (2 * eps)
            ad = float(np.sum(got[2 + i] * direction))
            check.close(f"{name}: {what} along a random direction (FD)", ad,
                        fd, rtol=1e-6, atol=1e-9)
    check.finish()


if __name__ == "__main__":
    main()
