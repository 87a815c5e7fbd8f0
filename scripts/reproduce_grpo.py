#!/usr/bin/python3
"""A GRPO-style run under several accumulation schedules: the same curves.

The experiment behind the RL trainers' accumulation bugs (TRL #5619,
ms-swift #10117, verl #7321): a policy (transformers' GPT-2, 2 layers, D 64,
a vocabulary of 32 tokens) is trained on a copy task by group-relative
policy optimization. Each step samples G = 4 completions of up to 24
tokens for each of 4 prompts of 8 tokens (token 0 ends a completion, so
their lengths differ), rewards each completion by the fraction of the
prompt it copies, and takes one AdamW step on the loss written in PyTorch
as the trainers write it: GRPO's advantages normalized within each
prompt's group (the group sums as one-hot products, in the loss) and
DAPO's token mean over every completion of the batch.

ga-opt imports that loss with the model once (ga-import) and compiles it
for each schedule with ga-compile: the 16 completions as 1, 2, 4 and 8
micro-batches, exact (ga-opt's sum over the global count, the group
statistics computed for the whole batch before the micro-batches), and 2
micro-batches naive (each micro-batch's loss alone, averaged: its own
group statistics and token count). The completions of a prompt are
spread over the batch, so that every micro-batch holds part of every
group. Every run starts from the same weights
and samples with the same seeds: with the exact schedules the weights,
and so the samples, rewards and losses, are the same bits at every step;
the naive schedule's are not.

  PY=$(scripts/setup_frontend.sh --locate)
  PYTHONPATH=python $PY scripts/reproduce_grpo.py --build build --workdir /tmp/grpo
  ... --steps 4 --check          # what test/Import/reproduce-grpo.test runs

Prints each schedule's reward and loss curves (every 5th step) and the
largest difference of each schedule's curves to the full batch's; --check
exits with status 1 unless every exact schedule's curves are the full
batch's bit for bit and the naive one's are not. --csv writes the curves.
(Ranks: `models.test` checks the same loss at r = 2 under mpirun.)
"""

import argparse
import copy
import csv
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import ga_scripts  # noqa: F401  (the checkout's python/ on the path)
import ga_import
import ga_step

os.environ["HF_HUB_OFFLINE"] = "1"
VOCAB, PROMPT, COMPLETION, GROUPS, G = 32, 8, 24, 4, 4
ROWS = GROUPS * G
# (micro-batches, naive)
SCHEDULES = [(1, False), (2, False), (4, False), (8, False), (2, True)]


def dapo_grpo_loss(outputs, batch):
    """GRPO's group-normalized advantages and DAPO's token mean over the
    batch, on the completions' next-token log-probabilities."""
    logits = outputs.logits[:, :-1]
    labels = batch["labels"][:, 1:]
    logp = -F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                            labels.reshape(-1), ignore_index=-100,
                            reduction="none").reshape(labels.shape)
    mask = (labels != -100).to(logp.dtype)
    onehot = F.one_hot(batch["group"], GROUPS).to(logp.dtype)
    rewards = batch["rewards"].to(logp.dtype)
    counts = onehot.sum(0)
    mean = (onehot * rewards[:, None]).sum(0) / counts
    square = (onehot * (rewards * rewards)[:, None]).sum(0) / counts
    std = torch.sqrt(square - mean * mean + 1e-6)
    advantage = (rewards - (onehot * mean).sum(1)) / (
        (onehot * std).sum(1) + 1e-4)
    return -(advantage[:, None] * logp * mask).sum() / mask.sum()


def prompts(step):
    gen = torch.Generator().manual_seed(10_000 + step)
    return torch.randint(1, VOCAB, (GROUPS, PROMPT), generator=gen)


@torch.no_grad()
def sample(model, step):
    """A batch of G completions per prompt, sampled from the policy with
    this step's seed: input_ids, labels (the completions' tokens, -100 at
    the prompts and after the end), rewards, group ids."""
    gen = torch.Generator().manual_seed(20_000 + step)
    # Completion i answers prompt i % GROUPS: every micro-batch holds part
    # of every group (the group statistics cross micro-batches).
    prompt = prompts(step).repeat(G, 1)
    ids = torch.zeros(ROWS, PROMPT + COMPLETION, dtype=torch.int64)
    ids[:, :PROMPT] = prompt
    alive = torch.ones(ROWS, dtype=torch.bool)
    length = torch.zeros(ROWS, dtype=torch.int64)
    for t in range(PROMPT, PROMPT + COMPLETION):
        logits = model(input_ids=ids[:, :t]).logits[:, -1].float()
        token = torch.multinomial(F.softmax(logits, -1), 1,
                                  generator=gen)[:, 0]
        token = torch.where(alive, token, torch.zeros_like(token))
        ids[:, t] = token
        length += alive.to(torch.int64)
        alive &= token != 0
    labels = torch.full_like(ids, -100)
    for row in range(ROWS):
        labels[row, PROMPT:PROMPT + int(length[row])] = \
            ids[row, PROMPT:PROMPT + int(length[row])]
    # The reward: the share of the completion's first 8 tokens that occur
    # in its prompt.
    head = ids[:, PROMPT:2 * PROMPT]
    rewards = (head[:, :, None] == prompt[:, None, :]).any(-1).float().mean(1)
    group = torch.arange(ROWS) % GROUPS
    return {"input_ids": ids, "labels": labels, "rewards": rewards,
            "group": group}, length


def label(k, naive):
    return f"k={k}{' naive' if naive else ''}"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--csv", help="writes every schedule's curves")
    args = parser.parse_args()
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    policy = GPT2LMHeadModel(GPT2Config(
        vocab_size=VOCAB, n_positions=PROMPT + COMPLETION, n_embd=64,
        n_layer=2, n_head=4, attn_implementation="eager", bos_token_id=0,
        eos_token_id=0)).eval()
    os.makedirs(args.workdir, exist_ok=True)
    ga_opt = os.path.join(args.build, "bin", "ga-opt")
    ga_compile = os.path.join(args.build, "bin", "ga-compile")

    start = time.monotonic()
    example, _ = sample(policy, 0)
    step_ir = ga_import.import_step(
        policy, example, ga_opt=ga_opt, loss_fn=dapo_grpo_loss,
        model_inputs=["input_ids"])
    libraries = {}
    for k, naive in SCHEDULES:
        name = label(k, naive).replace(" ", "-").replace("=", "")
        src = os.path.join(args.workdir, f"{name}.mlir")
        lib = os.path.join(args.workdir, f"lib{name}.so")
        with open(src, "w") as f:
            f.write(step_ir.reschedule(k).mlir)
        command = [ga_compile, src, "-o", lib]
        if naive:
            command += ["--pipeline-options", "naive=true"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"reproduce_grpo.py: {' '.join(command)} failed:\n"
                     + done.stderr[-3000:])
        libraries[(k, naive)] = ga_step.load(lib)
    print(f"# imported and compiled {len(SCHEDULES)} schedules in "
          f"{time.monotonic() - start:.1f} s")

    # The first step against PyTorch's float64 autograd of the same loss.
    full_step = libraries[(1, False)]
    named = dict(policy.named_parameters())
    loss, *grads = full_step(*full_step.arguments(
        {**{n: p.detach() for n, p in named.items()}, **example}))
    reference = copy.deepcopy(policy).double()
    loss64 = dapo_grpo_loss(reference(input_ids=example["input_ids"]),
                            example)
    loss64.backward()
    ref = dict(reference.named_parameters())
    loss64 = float(loss64.detach())
    err = max([abs(float(loss) - loss64) / abs(loss64)] + [
        float((torch.from_numpy(g).double() - ref[n].grad).norm()
              / ref[n].grad.norm().clamp(min=1e-30))
        for n, g in zip([n for n in full_step.input_names if n in named],
                        grads)])
    print(f"# step 1, k=1: loss and gradients within {err:.2e} of PyTorch's "
          "float64 autograd")
    ok = err <= 1e-5

    curves = {}
    for (k, naive), step in libraries.items():
        model = copy.deepcopy(policy)
        named = dict(model.named_parameters())
        params = [named[n] for n in step.input_names if n in named]
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        rewards, losses, lengths = [], [], []
        for i in range(args.steps):
            batch, length = sample(model, i)
            loss, *grads = step(*step.arguments(
                {**{n: p.detach() for n, p in named.items()}, **batch}))
            for p, g in zip(params, grads):
                p.grad = torch.from_numpy(g)
            opt.step()
            rewards.append(float(batch["rewards"].mean()))
            losses.append(float(loss))
            lengths.append(float(length.float().mean()))
        curves[(k, naive)] = {"reward": rewards, "loss": losses,
                              "length": lengths}

    full = curves[(1, False)]
    print(f"# {args.steps} steps of {ROWS} completions ({GROUPS} prompts x "
          f"{G}), AdamW lr {args.lr}")
    window = max(1, min(10, args.steps // 3))
    starts = range(0, args.steps - window + 1, window)
    print("# mean reward over steps "
          + ", ".join(f"{i + 1}-{i + window}" for i in starts))
    for (k, naive), c in curves.items():
        print(f"{label(k, naive):>10}: " + " ".join(
            f"{sum(c['reward'][i:i + window]) / window:.3f}" for i in starts))
    for (k, naive), c in curves.items():
        if (k, naive) == (1, False):
            continue
        same = c == full
        diff = max(max(abs(a - b) for a, b in zip(c[key], full[key]))
                   for key in ("reward", "loss"))
        verdict = "the full batch's bits" if same else \
            f"off by up to {diff:.3g}"
        print(f"{label(k, naive)}: reward and loss curves {verdict}")
        ok &= same != naive
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["schedule", "step", "reward", "loss",
                          "mean_length"])
            for (k, naive), c in curves.items():
                for i in range(args.steps):
                    out.writerow([label(k, naive), i + 1, c["reward"][i],
                                  c["loss"][i], c["length"][i]])
    print("reproduce_grpo: " + ("ok" if ok else "FAIL") + ": exact "
          "schedules bitwise the full batch, naive not")
    if args.check and not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
