"""precision=bf16 against an independent float64 PyTorch model.

examples/tiny_gpt.mlir compiled with `precision=bf16` is compared with a
float64 PyTorch model of the same network written here, whose roundings are
the ones precision=bf16 states (ga-mixed-precision's round-results):

* every matrix product reads its two inputs rounded to bfloat16 and sums
  in float32 (bf16-mixed), forward and backward;
* a product whose result is per-example (an activation or an activation's
  gradient, the attention's scores and their gradients) rounds its result
  to bfloat16 once; where its only reader adds a bias, the sum is rounded,
  the bias read as its bfloat16 rounding (a bfloat16 GEMM's bias
  epilogue, autocast's addmm); a parameter's gradient (a sum over the
  batch) is not rounded;
* everything else (layer norms, softmax, GELU, the residual stream, the
  loss and its gradient, the parameters' gradients) in float32.

The roundings are placed after differentiation: the backward pass is the
float32 step's, reading the rounded values (in the model, a rounding
passes its gradient through unchanged).

Checks:
1. the loss and all 15 gradients within REL = 2e-5 of the rounded model
   (tensor norms);
2. the checks can fail: the bf16-mixed step (its products' results not
   rounded) is more than 5 REL away from the rounded model, and the
   rounded model more than 5 REL away from the bf16-mixed model;
3. micro-batch splits stay exact: k = 4 against k = 1, loss and gradients
   bitwise (the roundings are of per-example values, the same in every
   split; the parameters' gradients accumulate in float32 in the order of
   the whole batch);
4. the bf16 step holds fewer bytes at its peak than the bf16-mixed step
   (ga-run's measured peak of the step's buffers).
"""

import math
import os

import numpy as np
import torch

from bf16_mixed import (REL, bf16, check_model, check_smaller_peak, flat,
                        layer_norm, reference as mixed_reference, run_split,
                        setup)
from ga_scripts.reference_harness import Checker, run_ga_run
from tiny_gpt_reference import B, D, DH, H, L, PARAMS, S, V  # noqa: E402


def rounded(t):
    """t with the value of its bfloat16 rounding, its gradient passed
    through: a rounding placed after differentiation."""
    return t + (bf16(t) - t).detach()


class Product(torch.autograd.Function):
    """scale * einsum(spec, bf16(a), bf16(b)) (+ bias), its result rounded;
    the gradient products read the rounded incoming gradient and the
    rounded inputs and round their results where the operand is
    per-example (`a_rows`, `b_rows`)."""

    @staticmethod
    def forward(ctx, spec, a, b, scale, a_rows, b_rows):
        ins, out = spec.split("->")
        sa, sb = ins.split(",")
        ra, rb = bf16(a), bf16(b)
        ctx.save_for_backward(ra, rb)
        ctx.specs = (f"{out},{sb}->{sa}", f"{sa},{out}->{sb}")
        ctx.scale, ctx.rows = scale, (a_rows, b_rows)
        return torch.einsum(spec, ra, rb) * scale

    @staticmethod
    def backward(ctx, grad):
        ra, rb = ctx.saved_tensors
        g = bf16(grad)
        da = torch.einsum(ctx.specs[0], g, rb) * ctx.scale
        db = torch.einsum(ctx.specs[1], ra, g) * ctx.scale
        return (None, bf16(da) if ctx.rows[0] else da,
                bf16(db) if ctx.rows[1] else db, None, None, None)


def product(spec, a, b, scale=1.0, bias=None, b_rows=False):
    """A product of per-example rows `a` (and `b` where b_rows), its result
    rounded after the bias where there is one."""
    y = Product.apply(spec, a, b, scale, True, b_rows)
    return rounded(y if bias is None else y + rounded(bias))


def forward(p, tokens, labels):
    x = p["wte"][tokens] + p["wpe"][None, :, :]
    x = x.reshape(B * S, D)
    causal = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
    for l in range(L):
        h = layer_norm(x, p["ln1_g"][l], p["ln1_b"][l])
        qkv = product("nd,de->ne", h, p["w_qkv"][l])
        q, k, v = (qkv[:, i * D:(i + 1) * D].reshape(B, S, H, DH)
                   for i in range(3))
        scores = product("bihd,bjhd->bhij", q, k,
                         float(np.float32(1 / math.sqrt(DH))), b_rows=True)
        scores = scores.masked_fill(causal, -1e9)
        probs = torch.softmax(scores, dim=-1)
        ctx = product("bhij,bjhd->bihd", probs, v,
                      b_rows=True).reshape(B * S, D)
        x = x + product("nd,de->ne", ctx, p["w_o"][l])
        h = layer_norm(x, p["ln2_g"][l], p["ln2_b"][l])
        f = product("nd,df->nf", h, p["w_fc"][l], bias=p["b_fc"][l])
        f = 0.5 * f * (1.0 + torch.erf(f / math.sqrt(2.0)))
        x = x + product("nf,fd->nd", f, p["w_proj"][l], bias=p["b_proj"][l])
    logits = product("nd,dv->nv", layer_norm(x, p["lnf_g"], p["lnf_b"]),
                     p["w_head"])
    logits = logits.reshape(B, S, V)[:, :-1].reshape(-1, V)
    target = labels[:, 1:].reshape(-1)
    return torch.nn.functional.cross_entropy(logits, target,
                                             ignore_index=-100)


def reference(params, tokens, labels):
    p = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for n, v in params.items()}
    loss = forward(p, torch.tensor(tokens), torch.tensor(labels))
    loss.backward()
    return float(loss.detach()), [p[n].grad.numpy() for n, _ in PARAMS]


def main():
    args, example, params, tokens, labels, inputs = setup()
    bf16_opts = ["--pipeline-options=precision=bf16"]
    res, out = run_ga_run(args.ga_run, example, inputs,
                          os.path.join(args.workdir, "bf16"), extra=bf16_opts)
    resm, outm = run_ga_run(args.ga_run, example, inputs,
                            os.path.join(args.workdir, "mixed"),
                            extra=["--pipeline-options=precision=bf16-mixed"])
    loss_r, grads_r = reference(params, tokens, labels)
    loss_m, grads_m = mixed_reference(params, tokens, labels, rounded=True)

    check = Checker("bf16")
    check_model(check, res, loss_r, grads_r)
    check.differs("the bf16-mixed step's gradients vs the rounded model",
                  flat(resm[1:16]), flat(grads_r), 5 * REL)
    check.differs("the rounded model vs the bf16-mixed model",
                  flat(grads_r), flat(grads_m), 5 * REL)

    res4 = run_split(args, inputs, bf16_opts)
    check.equal("k = 4 loss vs k = 1", np.float32(res4[0]),
                np.float32(res[0]))
    check.equal("k = 4 gradients vs k = 1", flat(res4[1:16]),
                flat(res[1:16]))

    check_smaller_peak(check, "bf16", out, "bf16-mixed", outm)
    check.finish()


if __name__ == "__main__":
    main()
