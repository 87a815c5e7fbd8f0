"""A PyTorch training loop whose loss and gradients come from ga-opt.

transformers' GPT-2 (bytes, 2 layers, D 64), imported with ga-import (the
labels shifted by one, as transformers' loss; 2 micro-batches, exact),
compiled ahead of time with ga-compile, and called from an ordinary loop
with torch tensors: the step replaces `loss.backward()`, torch.optim.AdamW
does the rest. The same loop with PyTorch's own autograd runs beside it
from the same weights, and the two loss curves are printed side by side.

  PY=$(scripts/setup_frontend.sh --locate)
  PYTHONPATH=python $PY examples/pytorch_loop.py --build build \\
      --workdir /tmp/loop [--data /tmp/corpus] [--steps 10]

--data: a dataset of scripts/make_corpus.py --seq-len 32 --attention-mask
(without it, rows of bytes that count up from a random start).
"""

import argparse
import copy
import os
import subprocess

import numpy as np
import torch
import torch.nn.functional as F

import ga_import
import ga_step

os.environ["HF_HUB_OFFLINE"] = "1"
B, S = 16, 32


def batches(data, steps):
    """`steps` batches of B rows: (input_ids, attention_mask, labels)."""
    if data:
        tokens = np.load(os.path.join(data, "tokens.npy"))
        mask = np.load(os.path.join(data, "attention_mask.npy"))
        labels = np.load(os.path.join(data, "labels.npy"))
    else:  # rows that count up from a random byte: easy to learn
        rng = np.random.default_rng(0)
        start = rng.integers(1, 256, (B * steps, 1))
        tokens = (start + np.arange(S)) % 255 + 1
        mask, labels = np.ones_like(tokens), tokens.copy()
    for s in range(steps):
        rows = [(s * B + i) % len(tokens) for i in range(B)]
        yield (torch.from_numpy(tokens[rows]), torch.from_numpy(mask[rows]),
               torch.from_numpy(labels[rows]))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--data")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(
        vocab_size=256, n_positions=S, n_embd=64, n_layer=2, n_head=4,
        attn_implementation="eager", bos_token_id=0, eos_token_id=0)).eval()
    reference = copy.deepcopy(model)

    # Import and compile the step once.
    example = next(batches(args.data, 1))
    step_ir = ga_import.import_step(
        model, dict(zip(("input_ids", "attention_mask", "labels"), example)),
        ga_opt=os.path.join(args.build, "bin", "ga-opt"), shift_labels=True,
        microbatches=2)
    os.makedirs(args.workdir, exist_ok=True)
    src = os.path.join(args.workdir, "step.mlir")
    lib = os.path.join(args.workdir, "libstep.so")
    with open(src, "w") as f:
        f.write(step_ir.mlir)
    subprocess.run([os.path.join(args.build, "bin", "ga-compile"), src,
                    "-o", lib], check=True, stdout=subprocess.DEVNULL)
    step = ga_step.load(lib)

    # The loop: ga-opt's step gives the loss and the gradients. The step
    # library names its arguments (the parameters' names, the batch's
    # keys): step.arguments orders them, and the gradients follow the
    # parameters in that order.
    named = dict(model.named_parameters())
    params = [named[n] for n in step.input_names if n in named]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    for i, (ids, mask, labels) in enumerate(batches(args.data, args.steps)):
        loss, *grads = step(*step.arguments(
            {**{n: p.detach() for n, p in named.items()},
             "input_ids": ids, "attention_mask": mask, "labels": labels}))
        for p, g in zip(params, grads):
            p.grad = torch.from_numpy(g)
        opt.step()
        # PyTorch's own step, from the same weights.
        logits = reference(input_ids=ids, attention_mask=mask).logits
        ref_loss = F.cross_entropy(logits[:, :-1].reshape(-1, 256),
                                   labels[:, 1:].reshape(-1),
                                   ignore_index=-100)
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        print(f"step {i + 1}: loss {float(loss):.6f} (ga-opt)  "
              f"{float(ref_loss):.6f} (PyTorch)")


if __name__ == "__main__":
    main()
