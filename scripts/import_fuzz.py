#!/usr/bin/python3
"""The importer's fuzzer: random PyTorch models and losses, each imported by
ga-import and checked against PyTorch's float64 autograd, with the splits.

  PY=$(scripts/setup_frontend.sh --locate)
  PYTHONPATH=python $PY scripts/import_fuzz.py --seed S --count N
                    [--build DIR] [--splits] [--keep-going]

Models. Each is composed at random from the families whose gradients live
in PyTorch's backward, modes or closures, and the ordinary ones around
them: token embeddings (with and without padding_idx or
scale_grad_by_freq, the pad id attended) or dense inputs; Linear layers;
activations (tanh, relu, the exact and the tanh GELU, SiLU, sigmoid,
softplus, leaky ReLU, abs, clamp); normalizations (LayerNorm, an RMSNorm
written out, F.normalize, BatchNorm in training mode); a causal softmax
attention; a causal Conv1d over the sequence (kernel 1-3, dilation 1-2); pooling over the sequence (mean, amax, max(dim)) or per-token
logits; maximum/minimum against zero; residual connections. Losses:
cross-entropy (mean over the valid labels, ignore -100, or sum, or with
class weights read by closure), a masked
token mean written in PyTorch, binary cross-entropy with logits, DPO's
-logsigmoid of a margin, a focal-style weighting, and terms that read the
model's parameters by closure (an L2 penalty, a learnable temperature);
now and then a torch.autograd.Function, which must be refused.

Oracle. ga-import's own check (the step run by ga-run at k = 1 on the
example batch against PyTorch's float64 autograd of the same module and
loss, bound 1e-5): a model is `ok` when the import passes it, `refused`
when ga-import refuses the model with its reason (a construct it cannot
carry, such as a Function), and `WRONG` when the check finds a gradient
that differs from PyTorch's (a construct imported with another meaning,
caught: the class to fix). With --splits, a model that imports is run
again at k = 2 micro-batches, which must give the k = 1 step's loss and
gradients bit for bit, or, where sums are reassociated (a parameter scaled
after a reduction), be as close to PyTorch's float64 autograd as the import
check requires of the k = 1 step (its bounds), or be refused by the split
analysis with a located reason (a batch statistic). Any other failure (an exception, a crash of a
tool) is `ERROR`.

Exit status 1 when any model is WRONG or ERROR. The last line:
`import-fuzz: N models in T s: a ok (r by float32 rounding), b refused, c
WRONG, d ERROR (splits: e bitwise, f reassociated, g refused, h DIFFER)`;
"by float32 rounding" counts the steps over their float32 bounds whose
float64 import matches PyTorch's float64 (the check's second opinion).
"""

import argparse
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import ga_import
from ga_import.check import compare, reference, run_step
from ga_scripts.paths import ROOT

HERE = os.path.join(ROOT, "scripts")

V, D, S = 12, 8, 6


class Negate(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -grad


class RMSNorm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)
                                             + 1e-6)


class SeqConv(torch.nn.Module):
    """A causal convolution over the sequence (channels D): Conv1d padded by
    (kernel - 1) * dilation, its first S positions kept."""

    def __init__(self, dim, kernel, dilation):
        super().__init__()
        self.conv = torch.nn.Conv1d(dim, dim, kernel, dilation=dilation,
                                    padding=(kernel - 1) * dilation)

    def forward(self, x):
        y = self.conv(x.transpose(1, 2))[..., :x.shape[1]]
        return y.transpose(1, 2)


class Attention(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / (x.shape[-1] ** 0.5)
        causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        return self.proj(F.softmax(scores, dim=-1) @ v)


ACTIVATIONS = {
    "tanh": torch.tanh, "relu": F.relu, "gelu": F.gelu,
    "gelu-tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "sigmoid": torch.sigmoid, "softplus": F.softplus,
    "leaky-relu": lambda x: F.leaky_relu(x, 0.1), "abs": torch.abs,
    "clamp": lambda x: x.clamp(-0.5, 0.5), "max0": lambda x: torch.maximum(
        x, torch.zeros_like(x)), "min0": lambda x: torch.minimum(
        x, torch.zeros_like(x)), "negate-fn": Negate.apply,
}


class Model(torch.nn.Module):
    """A random model of `spec` (a dict of choices, printed with the
    result)."""

    def __init__(self, spec):
        super().__init__()
        self.spec = spec
        if spec["input"] == "tokens":
            self.emb = torch.nn.Embedding(V, D, **spec["embedding"])
        else:
            self.inp = torch.nn.Linear(4, D)
        self.layers = torch.nn.ModuleList()
        for layer in spec["layers"]:
            if layer == "attention":
                self.layers.append(Attention(D))
            elif layer == "layernorm":
                self.layers.append(torch.nn.LayerNorm(D))
            elif layer == "rmsnorm":
                self.layers.append(RMSNorm(D))
            elif layer == "batchnorm":
                self.layers.append(torch.nn.BatchNorm1d(S))
            elif layer == "conv":
                self.layers.append(SeqConv(D, *spec["conv"]))
            else:
                self.layers.append(torch.nn.Linear(D, D))
        self.head = torch.nn.Linear(D, V)
        if spec["temperature"]:
            self.log_temp = torch.nn.Parameter(torch.tensor(0.2))

    def forward(self, x):
        h = self.emb(x) if self.spec["input"] == "tokens" else self.inp(x)
        for layer, kind, act in zip(self.layers, self.spec["layers"],
                                    self.spec["activations"]):
            if kind == "normalize":
                y = F.normalize(layer(h) * (h.abs() > 0.05), dim=-1)
            else:
                y = layer(h)
            y = ACTIVATIONS[act](y)
            h = h + y if self.spec["residual"] else y
        if self.spec["pool"] == "amax":
            h = h.amax(1)
        elif self.spec["pool"] == "max":
            h = h.max(1).values
        elif self.spec["pool"] == "mean":
            h = h.mean(1)
        return self.head(h)


def random_spec(rng):
    tokens = rng.random() < 0.6
    embedding = {}
    if tokens and rng.random() < 0.5:
        embedding["padding_idx"] = 0
    if tokens and rng.random() < 0.2:
        embedding["scale_grad_by_freq"] = True
    n = rng.randint(1, 3)
    kinds = ["linear", "linear", "attention", "layernorm", "rmsnorm",
             "normalize", "batchnorm", "conv"]
    acts = list(ACTIVATIONS)
    layers = [rng.choice(kinds) for _ in range(n)]
    activations = [rng.choice(acts if rng.random() < 0.1 else
                              [a for a in acts if a != "negate-fn"])
                   for _ in range(n)]
    pool = rng.choice(["none", "none", "mean", "amax", "max"])
    losses = ["ce", "ce-sum", "ce-weighted", "token-mean", "bce", "dpo",
              "focal"]
    return {"input": "tokens" if tokens else "dense",
            "embedding": embedding, "layers": layers,
            "activations": activations, "residual": rng.random() < 0.5,
            "pool": pool, "loss": rng.choice(losses),
            "l2": rng.random() < 0.2, "temperature": rng.random() < 0.2,
            "conv": (rng.randint(1, 3), rng.randint(1, 2))}


def random_batch(spec, gen, rows=4):
    if spec["input"] == "tokens":
        x = torch.randint(0, V, (rows, S), generator=gen)
        x[:, 0] = 0  # the pad id (when there is one), attended
        x[:, 2] = x[:, 1]  # a repeated token: ties in a max-pooling
    else:
        x = torch.randn(rows, S, 4, generator=gen)
    shape = (rows,) if spec["pool"] != "none" else (rows, S)
    labels = torch.randint(0, V, shape, generator=gen)
    labels.view(-1)[1] = -100
    return {"x": x, "labels": labels}


def make_loss(spec, model):
    # Class weights of "ce-weighted": a float32 tensor of the loss's closure.
    classes = torch.rand(V, generator=torch.Generator().manual_seed(V)) + 0.5

    def loss_fn(out, b):
        labels = b["labels"]
        logits = out.reshape(-1, out.shape[-1])
        flat = labels.reshape(-1)
        if spec["temperature"]:
            logits = logits * model.log_temp.exp()
        valid = (flat != -100)
        kind = spec["loss"]
        if kind == "token-mean":
            ce = F.cross_entropy(logits, flat.clamp(min=0), reduction="none")
            loss = (ce * valid).sum() / valid.sum()
        elif kind == "bce":
            target = (flat.clamp(min=0) % 2).to(logits.dtype)
            per = F.binary_cross_entropy_with_logits(
                logits[:, 0], target, reduction="none")
            loss = (per * valid).sum() / valid.sum()
        elif kind == "dpo":
            margin = logits[:, 0] - logits[:, 1]
            loss = -(F.logsigmoid(0.5 * margin) * valid).sum() / valid.sum()
        elif kind == "focal":
            logp = F.log_softmax(logits, -1)
            picked = logp.gather(1, flat.clamp(min=0).unsqueeze(1))[:, 0]
            weight = (1 - picked.exp()) ** 2
            loss = -(weight * picked * valid).sum() / valid.sum()
        elif kind == "ce-weighted":
            loss = F.cross_entropy(logits, flat, weight=classes,
                                   ignore_index=-100)
        else:
            loss = F.cross_entropy(logits, flat, ignore_index=-100,
                                   reduction="sum" if kind == "ce-sum"
                                   else "mean")
        if spec["l2"]:
            loss = loss + 1e-3 * sum(p.pow(2).sum()
                                     for p in model.parameters())
        return loss
    return loss_fn


def run_one(seed, args, counts):
    rng = random.Random(seed)
    spec = random_spec(rng)
    torch.manual_seed(seed)
    model = Model(spec)
    if "batchnorm" not in spec["layers"]:
        model.eval()
    batch = random_batch(spec, torch.Generator().manual_seed(seed))
    loss_fn = make_loss(spec, model)
    tag = (f"seed {seed}: {spec['input']} {spec['embedding'] or ''} "
           f"{'+'.join(f'{k}/{a}' for k, a in zip(spec['layers'], spec['activations']))} "
           f"pool={spec['pool']} loss={spec['loss']}"
           f"{' +l2' if spec['l2'] else ''}"
           f"{' +temperature' if spec['temperature'] else ''}")
    try:
        step = ga_import.import_step(model, batch, ga_opt=args.ga_opt,
                                     ga_run=args.ga_run, loss_fn=loss_fn,
                                     model_inputs=["x"], log=None)
    except ga_import.ImportError_ as e:
        text = str(e)
        if "does not compute PyTorch's gradients" in text:
            counts["WRONG"] += 1
            print(f"WRONG {tag}\n  {text}")
        else:
            counts["refused"] += 1
            lines = text.splitlines()
            reason = next((l for l in lines if "error:" in l), lines[0])
            print(f"refused {tag}: {reason.strip()[:200]}")
        return
    except Exception as e:  # noqa: BLE001 - every other failure is a finding
        counts["ERROR"] += 1
        print(f"ERROR {tag}: {type(e).__name__}: {e}")
        return
    counts["ok"] += 1
    if step.check_result.float64 is not None:
        counts["rounding"] += 1
    print(f"ok {tag}: {step.check_result.summary()}")
    if not args.splits:
        return
    n = len(step.param_names) + 1
    full = run_step(args.ga_run, step.mlir, step.arguments(), n)
    try:
        split = run_step(args.ga_run, step.reschedule(2).mlir,
                         step.arguments(), n)
    except RuntimeError as e:
        first = [l for l in str(e).splitlines() if "error" in l][:1]
        counts["split refused"] += 1
        print(f"  k = 2 refused: {first[0][:200] if first else str(e)[:200]}")
        return
    if all(np.array_equal(a, b) for a, b in zip(full, split)):
        counts["split bitwise"] += 1
        return
    # Equal up to the reassociation of sums (DESIGN.md's invariant: a
    # parameter scaled after a reduction, such as a learnable temperature,
    # sums its micro-batches' partial products in another order). Judged
    # against the independent reference, PyTorch's float64 autograd, by the
    # import check's own bounds: a gradient that is a cancelling sum (the
    # temperature's, 1e-3 of the step's norm) moves by more than 1e-6 of
    # itself when its terms are reassociated, and stays as close to float64
    # as the float32 step is.
    loss64, grads64 = reference(torch, model, batch, step.param_names,
                                "labels", loss_fn, ["x"], False, -100,
                                "mean", "refuse")
    errors = compare(step.param_names, split[1:], grads64)
    loss_error = abs(float(split[0]) - loss64) / max(abs(loss64), 1.0)
    bounds = step.check_result.bounds
    over = [n for n, e in errors.items() if e > bounds[n]]
    if loss_error > step.check_result.loss_bound:
        over.append("the loss")
    worst = max([loss_error, *errors.values()])
    if not over:
        counts["split reassociated"] += 1
        print(f"  k = 2 reassociated: within {worst:.1e} of float64 (the "
              "check's bounds)")
    else:
        counts["split DIFFER"] += 1
        print(f"  k = 2 DIFFERS from float64 beyond the check's bounds in "
              f"{', '.join(over)} ({tag})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--splits", action="store_true")
    args = parser.parse_args()
    args.ga_opt = os.path.join(args.build, "bin", "ga-opt")
    args.ga_run = os.path.join(args.build, "bin", "ga-run")
    counts = dict.fromkeys(["ok", "rounding", "refused", "WRONG", "ERROR",
                            "split bitwise", "split reassociated",
                            "split refused", "split DIFFER"], 0)
    start = time.time()
    for seed in range(args.seed, args.seed + args.count):
        run_one(seed, args, counts)
        sys.stdout.flush()
    print(f"import-fuzz: {args.count} models in {time.time() - start:.0f} s: "
          f"{counts['ok']} ok ({counts['rounding']} by float32 rounding), "
          f"{counts['refused']} refused, "
          f"{counts['WRONG']} WRONG, {counts['ERROR']} ERROR (splits: "
          f"{counts['split bitwise']} bitwise, "
          f"{counts['split reassociated']} reassociated, "
          f"{counts['split refused']} refused, {counts['split DIFFER']} "
          f"DIFFER)")
    sys.exit(1 if counts["WRONG"] or counts["ERROR"] or
             counts["split DIFFER"] else 0)


if __name__ == "__main__":
    main()
