"""precision=bf16-mixed against an independent float64 PyTorch model.

examples/tiny_gpt.mlir compiled with `precision=bf16-mixed` (every matrix
product reads bfloat16 copies of its inputs and sums in float32) is compared
with a float64 PyTorch model of the same network written here, whose every
matrix product rounds its two inputs to bfloat16 in the forward pass and, in
its own backward pass (a torch.autograd.Function), the incoming gradient and
the saved inputs before each of the two gradient products: the semantics
ga-mixed-precision states, evaluated by PyTorch's autograd in float64.

Checks:
1. the loss and all 15 gradients of the bf16-mixed step within REL = 2e-5
   of the rounded reference (tensor norms; measured: at most 3e-6). The
   remaining difference is float32 arithmetic and the few inputs that sit
   so close to a bfloat16 rounding boundary that float32 and float64 round
   them to neighbours;
2. the checks can fail: the float32 step (same inputs) is more than 5 REL
   away from the rounded reference in the gradients, and the rounded
   reference is more than 5 REL away from the unrounded float64 model
   (measured: 8e-3 both, 80 times the bound);
3. micro-batch splits stay exact in this mode: k = 4 against k = 1 within
   1e-6 (the accumulators are float32; only the order of sums differs);
4. the bf16-mixed step holds fewer bytes at its peak than the float32 step
   (ga-run's measured peak of the step's buffers): the activations kept for
   the backward products are kept as bfloat16 copies.
"""

import math
import os
import re

import numpy as np
import torch

from ga_scripts.reference_harness import (Checker, ga_run_test_args,
                                          run_ga_run, with_schedule)
# The network's sizes, parameter list and inputs: those of the float64
# NumPy reference of the same example.
from tiny_gpt_reference import (B, D, DH, EPS, H, L, PARAMS, S,  # noqa: E402
                                V, make_inputs)

REL = 2e-5


def bf16(t):
    """t rounded to bfloat16 (to nearest, ties to even), back in float64."""
    return t.to(torch.float32).to(torch.bfloat16).to(torch.float64)


class RoundedProduct(torch.autograd.Function):
    """scale * einsum(spec, a, b) of bfloat16-rounded inputs; the gradient
    products read the rounded incoming gradient and the rounded inputs, and
    scale their sums (a scale inside a product's body stays there in its
    gradient products, as differentiation writes them)."""

    @staticmethod
    def forward(ctx, spec, a, b, scale):
        ins, out = spec.split("->")
        sa, sb = ins.split(",")
        ra, rb = bf16(a), bf16(b)
        ctx.save_for_backward(ra, rb)
        ctx.specs = (f"{out},{sb}->{sa}", f"{sa},{out}->{sb}")
        ctx.scale = scale
        return torch.einsum(spec, ra, rb) * scale

    @staticmethod
    def backward(ctx, grad):
        ra, rb = ctx.saved_tensors
        g = bf16(grad)
        return (None, torch.einsum(ctx.specs[0], g, rb) * ctx.scale,
                torch.einsum(ctx.specs[1], ra, g) * ctx.scale, None)


def product(spec, a, b, rounded, scale=1.0):
    return (RoundedProduct.apply(spec, a, b, scale) if rounded
            else torch.einsum(spec, a, b) * scale)


def layer_norm(x, g, b):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + EPS) * g + b


def forward(p, tokens, labels, rounded):
    x = p["wte"][tokens] + p["wpe"][None, :, :]
    x = x.reshape(B * S, D)
    causal = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
    for l in range(L):
        h = layer_norm(x, p["ln1_g"][l], p["ln1_b"][l])
        qkv = product("nd,de->ne", h, p["w_qkv"][l], rounded)
        q, k, v = (qkv[:, i * D:(i + 1) * D].reshape(B, S, H, DH)
                   for i in range(3))
        # The example scales each term of the scores' sum (float32
        # 1/sqrt(DH), as the example writes it).
        scores = product("bihd,bjhd->bhij", q, k, rounded,
                         float(np.float32(1 / math.sqrt(DH))))
        scores = scores.masked_fill(causal, -1e9)
        probs = torch.softmax(scores, dim=-1)
        ctx = product("bhij,bjhd->bihd", probs, v, rounded).reshape(B * S, D)
        x = x + product("nd,de->ne", ctx, p["w_o"][l], rounded)
        h = layer_norm(x, p["ln2_g"][l], p["ln2_b"][l])
        f = product("nd,df->nf", h, p["w_fc"][l], rounded) + p["b_fc"][l]
        f = 0.5 * f * (1.0 + torch.erf(f / math.sqrt(2.0)))
        x = x + product("nf,fd->nd", f, p["w_proj"][l], rounded) + \
            p["b_proj"][l]
    logits = product("nd,dv->nv", layer_norm(x, p["lnf_g"], p["lnf_b"]),
                     p["w_head"], rounded)
    logits = logits.reshape(B, S, V)[:, :-1].reshape(-1, V)
    target = labels[:, 1:].reshape(-1)
    return torch.nn.functional.cross_entropy(logits, target,
                                             ignore_index=-100)


def reference(params, tokens, labels, rounded):
    """Loss and gradients of the float64 model (inputs: float32 values)."""
    p = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for n, v in params.items()}
    loss = forward(p, torch.tensor(tokens), torch.tensor(labels), rounded)
    loss.backward()
    return float(loss.detach()), [p[n].grad.numpy() for n, _ in PARAMS]


def flat(grads):
    """The tensors of `grads` as one vector."""
    return np.concatenate([np.ravel(g) for g in grads])


def check_model(check, res, loss_r, grads_r):
    """The step's loss and gradients (`res`) against the rounded float64
    model's, within REL per tensor (the loss within 2e-5)."""
    check.close("loss vs the rounded float64 model", res[0], loss_r,
                rtol=2e-5)
    for i, (name, _) in enumerate(PARAMS):
        check.relative(f"d/d{name} vs the rounded float64 model",
                       res[1 + i], grads_r[i], REL)


def run_split(args, inputs, extra, microbatches=4):
    """The tiny GPT's results split in `microbatches` micro-batches."""
    with open(os.path.join(args.src, "examples", "tiny_gpt.mlir")) as f:
        source = f.read()
    split = os.path.join(args.workdir, f"tiny_gpt_k{microbatches}.mlir")
    with open(split, "w") as f:
        f.write(with_schedule(source, "tiny_gpt", microbatches=microbatches))
    return run_ga_run(args.ga_run, split, inputs,
                      os.path.join(args.workdir, f"k{microbatches}"),
                      extra=extra)[0]


def check_smaller_peak(check, name, out, other, other_out):
    """The step that printed `out` (ga-run's output, `name`) peaks below
    the one that printed `other_out` (`other`): ga-run's measured
    step_peak_bytes."""
    mine, theirs = peak(out), peak(other_out)
    check.true(f"the step's peak: {name} {mine} B < {other} {theirs} B",
               mine is not None and theirs is not None and mine < theirs,
               f"ga-run printed:\n{out}\n{other_out}")


def peak(stdout):
    m = re.search(r"^step_peak_bytes: (\d+)$", stdout, re.M)
    return int(m.group(1)) if m else None


def setup():
    """The test's arguments, the tiny GPT's path, and its float32 inputs:
    the parameters (a dict) and the list ga-run takes."""
    args = ga_run_test_args()
    example = os.path.join(args.src, "examples", "tiny_gpt.mlir")
    torch.manual_seed(0)
    params, tokens, labels = make_inputs(np.random.default_rng(7))
    params = {n: v.astype(np.float32) for n, v in params.items()}
    inputs = [params[n] for n, _ in PARAMS] + [tokens, labels]
    return args, example, params, tokens, labels, inputs


def main():
    args, example, params, tokens, labels, inputs = setup()
    mixed = ["--pipeline-options=precision=bf16-mixed"]
    res16, out16 = run_ga_run(args.ga_run, example, inputs,
                              os.path.join(args.workdir, "bf16"), extra=mixed)
    res32, out32 = run_ga_run(args.ga_run, example, inputs,
                              os.path.join(args.workdir, "f32"))
    loss_r, grads_r = reference(params, tokens, labels, rounded=True)
    loss_x, grads_x = reference(params, tokens, labels, rounded=False)

    check = Checker("bf16-mixed")
    check_model(check, res16, loss_r, grads_r)
    check.differs("the float32 step's loss vs the rounded model", res32[0],
                  loss_r, 5 * 2e-5)
    check.differs("the float32 step's gradients vs the rounded model",
                  flat(res32[1:16]), flat(grads_r), 5 * REL)
    check.differs("the rounded model vs the unrounded float64 model",
                  flat(grads_r), flat(grads_x), 5 * REL)

    # Splits stay exact: k = 4 micro-batches against the whole batch.
    res4 = run_split(args, inputs, mixed)
    check.close("k = 4 loss vs k = 1", res4[0], res16[0], rtol=1e-6)
    check.relative("k = 4 gradients vs k = 1", flat(res4[1:16]),
                   flat(res16[1:16]), 1e-6)

    check_smaller_peak(check, "bf16-mixed", out16, "float32", out32)
    check.finish()


if __name__ == "__main__":
    main()
