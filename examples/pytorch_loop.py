"""A PyTorch training loop whose whole step is compiled by ga-opt.

transformers' GPT-2 (bytes, 2 layers, D 64, random weights) trained on
padded rows with 4 exact micro-batches. The three lines that differ from
an ordinary PyTorch loop are marked `# ga-opt`: compile_step imports the
model and its loss (checked against PyTorch's autograd on the first
batch), compiles forward, backward, clipping and AdamW into one library
(cached: a second run loads it) and updates the model's parameters in
place. Two loops with PyTorch's own autograd and torch.optim.AdamW run
beside it from the same weights: on the full batch (what an exact split
must give), and accumulating 4 micro-batches the usual way (the mean of
their means, which weighs a padded row's tokens more): the three loss
curves are printed side by side, and the largest distance of each from the
full batch's last.

  PY=$(scripts/setup_frontend.sh --locate)
  $PY -m pip install .        # once: ga_opt into the front end's environment
  $PY examples/pytorch_loop.py [--data /tmp/corpus] [--steps 10] [--device cpu]

--data: a dataset of scripts/make_corpus.py --seq-len 32 --attention-mask
(without it, rows of bytes that count up from a random start, padded).
--device: cpu, cuda, or auto (default: cuda where PyTorch sees a GPU).
"""

import argparse
import copy
import os

import numpy as np
import torch
import torch.nn.functional as F

import ga_opt  # ga-opt

os.environ["HF_HUB_OFFLINE"] = "1"
B, S = 16, 32


def batches(data, steps):
    """`steps` batches of B rows: input_ids, attention_mask, labels."""
    if data:
        tokens = np.load(os.path.join(data, "tokens.npy"))
        mask = np.load(os.path.join(data, "attention_mask.npy"))
        labels = np.load(os.path.join(data, "labels.npy"))
    else:  # rows that count up from a random byte, some padded
        rng = np.random.default_rng(0)
        start = rng.integers(1, 256, (B * steps, 1))
        tokens = (start + np.arange(S)) % 255 + 1
        lengths = rng.integers(S // 2, S + 1, (B * steps, 1))
        mask = (np.arange(S) < lengths).astype(np.int64)
        labels = np.where(mask == 1, tokens, -100)
    for s in range(steps):
        rows = [(s * B + i) % len(tokens) for i in range(B)]
        yield {"input_ids": torch.from_numpy(tokens[rows]),
               "attention_mask": torch.from_numpy(mask[rows]),
               "labels": torch.from_numpy(labels[rows])}


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--data")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--device", default="auto",
                        choices=("auto", "cpu", "cuda"))
    args = parser.parse_args()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(
        vocab_size=256, n_positions=S, n_embd=64, n_layer=2, n_head=4,
        bos_token_id=0, eos_token_id=0)).eval().to(device)
    full, naive = copy.deepcopy(model), copy.deepcopy(model)

    data = [{k: v.to(device) for k, v in b.items()}
            for b in batches(args.data, args.steps)]
    step = ga_opt.compile_step(model, data[0], lr=1e-3,  # ga-opt
                               microbatches=4, target=device)
    print(f"on {device}")
    torch_steps = [torch_step(full, 1), torch_step(naive, 4)]
    print("step  ga-opt (4 micro-batches)  PyTorch (full batch)  "
          "PyTorch (4 micro-batches, mean of means)")
    curves = [[], [], []]
    for i, batch in enumerate(data):
        out = step(batch)  # ga-opt
        losses = [float(out["loss"])] + [s(batch) for s in torch_steps]
        for curve, loss in zip(curves, losses):
            curve.append(loss)
        print(f"{i + 1:4d}  {losses[0]:24.6f}  {losses[1]:20.6f}  "
              f"{losses[2]:40.6f}")
    for name, curve in (("ga-opt", curves[0]), ("naive", curves[2])):
        print(f"{name}: largest distance from the full batch's loss "
              f"{max(abs(a - b) for a, b in zip(curve, curves[1])):.1e}")


def loss_of(model, batch):
    """The mean over the valid labels of `batch`, shifted by one."""
    logits = model(input_ids=batch["input_ids"],
                   attention_mask=batch["attention_mask"]).logits
    return F.cross_entropy(logits[:, :-1].reshape(-1, 256),
                           batch["labels"][:, 1:].reshape(-1))


def torch_step(model, k):
    """PyTorch's step over k micro-batches, each loss divided by k (the
    usual accumulation), clipped at 1.0, AdamW; returns its loss as
    logged (the mean of the micro-batches' means)."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(batch):
        opt.zero_grad()
        total = 0.0
        for i in range(k):
            part = {n: t.chunk(k)[i] for n, t in batch.items()}
            loss = loss_of(model, part) / k
            loss.backward()
            total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return total
    return step


if __name__ == "__main__":
    main()
