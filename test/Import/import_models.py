"""PyTorch models through ga-import, against PyTorch's float64 autograd.

For each model (built from a seed, random weights; nothing downloaded):
the model is imported with ga-import (torch-mlir's FX importer, linalg on
tensors, F.cross_entropy as train.cross_entropy), compiled with the
default CPU pipeline and run by ga-run on the example batch. The loss and
every gradient must be within a relative 1e-5 (tensor norm) of the same
model's float64 loss and autograd gradients on the same weights and batch
(float32 sums of at most 2,048 terms: relative errors near 1e-7, measured
below 1e-6); a gradient that is zero in exact arithmetic is compared
relative to 1e-4 of the norm of all gradients instead. The batch has padding (-100 labels, one example all padding).

With --splits: the same step split into k = 2 and 4 micro-batches gives
the full batch's loss and gradients bit for bit; the naive split (means of
micro-batch means) is off by more than 1e-6 relative (or NaN: a micro-batch
without a valid label); with --mpirun, r = 2 ranks, alone and with k = 2
and 4 micro-batches each (where the batch divides), agree with the full
batch within 1e-6. The models with a loss written in PyTorch
(*_torch_loss) go through the same checks: ga-opt proves their split exact
from the exported linalg.

  import_models.py --ga-opt BIN --ga-run BIN --python DIR --workdir DIR
                   [--models mlp,...] [--splits] [--mpirun LAUNCHER]
"""

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import torch

import ga_import
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class MLP(torch.nn.Module):
    """The sizes of examples/mlp.mlir: D 32, hidden 64, V 64."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 64, bias=False)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def mlp_batch(gen):
    x = torch.randn(8, 16, 32, generator=gen)
    labels = torch.randint(0, 64, (8, 16), generator=gen)
    labels[torch.rand(8, 16, generator=gen) < 0.25] = -100
    labels[5] = -100
    return {"x": x, "labels": labels}


class Block(torch.nn.Module):
    """nanoGPT's block: pre-norm causal attention (written out, or
    scaled_dot_product_attention) and a GELU MLP."""

    def __init__(self, dim, heads, sdpa):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.fc = torch.nn.Linear(dim, 4 * dim)
        self.out = torch.nn.Linear(4 * dim, dim)
        self.heads, self.sdpa = heads, sdpa

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
            mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
            att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            y = att @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class NanoGPT(torch.nn.Module):
    """B 4, S 32, V 256, D 64, 4 heads, 2 layers; the LM head tied to the
    token embedding."""

    def __init__(self, sdpa=False):
        super().__init__()
        self.wte = torch.nn.Embedding(256, 64)
        self.wpe = torch.nn.Embedding(32, 64)
        self.blocks = torch.nn.ModuleList([Block(64, 4, sdpa)
                                           for _ in range(2)])
        self.lnf = torch.nn.LayerNorm(64)
        self.head = torch.nn.Linear(64, 256, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.lnf(x))


class MoE(torch.nn.Module):
    """A mixture of 4 GELU experts with top-1 routing (each token to its
    router's most probable expert, scaled by that probability), every
    expert computed densely and the others' outputs masked away: the
    routing is an argmax and a one-hot, no sort."""

    def __init__(self, dim, experts=4):
        super().__init__()
        self.router = torch.nn.Linear(dim, experts, bias=False)
        self.fc = torch.nn.Parameter(0.02 * torch.randn(experts, dim, 4 * dim))
        self.out = torch.nn.Parameter(
            0.02 * torch.randn(experts, 4 * dim, dim))
        self.experts = experts

    def forward(self, x):
        logits = self.router(x)
        probs = F.softmax(logits, dim=-1)
        choice = F.one_hot(probs.argmax(-1), self.experts).to(x.dtype)
        gate = (probs * choice).sum(-1, keepdim=True)
        hidden = F.gelu(torch.einsum("bsd,edf->bsef", x, self.fc))
        y = torch.einsum("bsef,efd->bsed", hidden, self.out)
        return (y * choice[..., None]).sum(2) * gate, (logits, probs, choice)


class NanoMoE(torch.nn.Module):
    """NanoGPT's sizes (2 layers) with a mixture of experts as each block's
    MLP; returns the logits and each layer's router logits, probabilities
    and one-hot choices, for the losses."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(256, 64)
        self.wpe = torch.nn.Embedding(32, 64)
        self.attn = torch.nn.ModuleList([Block(64, 4, False)
                                         for _ in range(2)])
        self.moe = torch.nn.ModuleList([MoE(64) for _ in range(2)])
        self.lnf = torch.nn.LayerNorm(64)
        self.head = torch.nn.Linear(64, 256, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        routers = []
        for attn, moe in zip(self.attn, self.moe):
            # The block's attention half; its MLP half is the mixture.
            b, s, d = x.shape
            q, k, v = attn.qkv(attn.ln1(x)).split(d, dim=2)
            q, k, v = (t.view(b, s, 4, d // 4).transpose(1, 2)
                       for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // 4))
            mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
            att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, s, d)
            x = x + attn.proj(y)
            mixed, router = moe(attn.ln2(x))
            x = x + mixed
            routers.append(router)
        return self.head(self.lnf(x)), routers


def moe_z_loss(outputs, batch):
    """The token mean of the cross-entropy plus the router z-loss (1e-3
    times the mean over tokens of the square of the router logits'
    logsumexp), every token counted."""
    logits, routers = outputs
    labels = batch["labels"]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                         labels.reshape(-1), ignore_index=-100)
    # Python's sum() starts from 0: the split adds that zero once per
    # micro-batch, which changes nothing.
    z = sum((torch.logsumexp(r_logits, dim=-1) ** 2).mean()
            for r_logits, _, _ in routers)
    return ce + 1e-3 * z


def moe_balance_loss(outputs, batch):
    """The token mean of the cross-entropy plus the global-batch load
    balancing loss, 0.01 * E * sum_i f_i P_i per layer (f_i: the fraction of
    the batch's tokens routed to expert i, no gradient; P_i: the mean router
    probability): a product of two batch means, which a split computes only
    with the batch's f_i known before the micro-batches: with
    batch-statistics=prepass, exact; without, refused."""
    logits, routers = outputs
    labels = batch["labels"]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                         labels.reshape(-1), ignore_index=-100)
    return ce + _balance(routers)


def _balance(routers):
    """0.01 * E * sum_i f_i P_i summed over the layers."""
    first, second = (
        probs.shape[-1] * (choice.reshape(-1, choice.shape[-1]).mean(0) *
                           probs.reshape(-1, probs.shape[-1]).mean(0)).sum()
        for _, probs, choice in routers)
    return 0.01 * (first + second)


def gpt_batch(gen, key="idx"):
    idx = torch.randint(0, 256, (4, 32), generator=gen)
    labels = torch.randint(0, 256, (4, 32), generator=gen)
    labels[torch.rand(4, 32, generator=gen) < 0.25] = -100
    labels[1] = -100
    return {key: idx, "labels": labels}


def gpt2():
    """transformers' GPT2LMHeadModel at nanoGPT's sizes (eager attention)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=256, n_positions=32, n_embd=64, n_layer=2,
                        n_head=4, attn_implementation="eager",
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config).eval()


def gpt2_batch(gen):
    batch = gpt_batch(gen, "input_ids")
    batch["attention_mask"] = torch.ones(4, 32, dtype=torch.int64)
    return batch


def gpt2_padded_batch(gen):
    """Padding hidden by the attention mask and without labels: rows 1 and
    3 padded on the left (12 and 23 tokens: their real queries would see
    the padding without the mask, their padding queries see no key), row 2
    on the right (5 tokens)."""
    batch = gpt2_batch(gen)
    for row, pad in ((1, slice(0, 12)), (2, slice(27, 32)),
                     (3, slice(0, 23))):
        batch["attention_mask"][row, pad] = 0
        batch["labels"][row, pad] = -100
    return batch


def right_padded_batch(gen):
    """Rows of 32, 20, 27 and 9 tokens, padded on the right (every query
    sees its row's first token: transformers' Llama in float64 gives the
    rows of left padding, which see no key, NaN)."""
    batch = gpt2_batch(gen)
    for row, length in enumerate((32, 20, 27, 9)):
        batch["attention_mask"][row, length:] = 0
        batch["labels"][row, length:] = -100
    return batch


def llama():
    """transformers' LlamaForCausalLM: RMSNorm, SwiGLU, rotary embeddings,
    grouped-query attention (4 heads, 2 key-value heads)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=32,
                         attn_implementation="eager", bos_token_id=0,
                         eos_token_id=1)
    return LlamaForCausalLM(config).eval()


def bert():
    """transformers' BertForMaskedLM: bidirectional attention, learned
    positions and token types, GELU (erf)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import BertConfig, BertForMaskedLM
    config = BertConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                        num_hidden_layers=2, num_attention_heads=4,
                        max_position_embeddings=32, attn_implementation="eager",
                        pad_token_id=0)
    return BertForMaskedLM(config).eval()


def bert_batch(gen):
    """Masked language modelling: the labels are the inputs at 15% of the
    positions, -100 elsewhere (one example has none)."""
    batch = gpt2_batch(gen)
    labels = batch["input_ids"].clone()
    labels[torch.rand(4, 32, generator=gen) >= 0.15] = -100
    labels[1] = -100
    batch["labels"] = labels
    batch["token_type_ids"] = torch.zeros(4, 32, dtype=torch.int64)
    return batch


def bert_padded_batch(gen):
    """bert_batch with rows 2 and 3 padded on the right (27 and 9 tokens),
    the padding hidden by the attention mask and without labels."""
    batch = bert_batch(gen)
    for row, length in ((2, 27), (3, 9)):
        batch["attention_mask"][row, length:] = 0
        batch["labels"][row, length:] = -100
    return batch


def token_mean_ce(outputs, batch):
    """The loss as trainers write it: F.cross_entropy's mean over the valid
    labels, in PyTorch (exported and judged by ga-opt, not replaced)."""
    logits = getattr(outputs, "logits", outputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           batch["labels"].reshape(-1), ignore_index=-100)


def _weighted_terms(outputs, batch):
    logits = getattr(outputs, "logits", outputs)
    labels = batch["labels"].reshape(-1)
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels,
                         ignore_index=-100, reduction="none")
    return ce, (labels != -100).sum()


def confidence_weighted_ce(outputs, batch):
    """Each valid token's cross-entropy weighted by the model's own
    probability of its label, detached (a focal-style reweighting: the
    weight scales the gradient and carries none), over the valid count."""
    ce, count = _weighted_terms(outputs, batch)
    return (torch.exp(-ce).detach() * ce).sum() / count


def confidence_weighted_ce_no_grad(outputs, batch):
    """confidence_weighted_ce with its weight computed under no_grad."""
    ce, count = _weighted_terms(outputs, batch)
    with torch.no_grad():
        weight = torch.exp(-ce)
    return (weight * ce).sum() / count


def confidence_weighted_ce_attached(outputs, batch):
    """The same weights without detaching them: another objective, whose
    gradient also flows through the weight."""
    ce, count = _weighted_terms(outputs, batch)
    return (torch.exp(-ce) * ce).sum() / count


def grpo_batch(gen):
    """mlp_batch's completions with a reward each, in two prompt groups of
    four whose members interleave (every micro-batch and rank holds part
    of each group)."""
    batch = mlp_batch(gen)
    batch["rewards"] = torch.randn(8, generator=gen)
    batch["group"] = torch.tensor([0, 1, 0, 1, 1, 0, 1, 0])
    return batch


def _advantages(batch, dtype):
    """GRPO's group-normalized advantages: each completion's reward less its
    group's mean, over its group's standard deviation (the groups' sums as
    one-hot products)."""
    onehot = F.one_hot(batch["group"], 2).to(dtype)
    rewards = batch["rewards"].to(dtype)
    counts = onehot.sum(0)
    mean = (onehot * rewards[:, None]).sum(0) / counts
    square = (onehot * (rewards * rewards)[:, None]).sum(0) / counts
    std = torch.sqrt(square - mean * mean + 1e-6)
    return (rewards - (onehot * mean).sum(1)) / ((onehot * std).sum(1) + 1e-4)


def _label_logp(outputs, batch):
    """(each token's log-probability of its label, the valid-token mask)."""
    logits = getattr(outputs, "logits", outputs)
    labels = batch["labels"]
    logp = -F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                            labels.reshape(-1), ignore_index=-100,
                            reduction="none").reshape(labels.shape)
    return logp, (labels != -100).to(logp.dtype)


def _grpo_terms(outputs, batch, advantage=None):
    """(each token's advantage-weighted log-probability, the valid-token
    mask, the log-probabilities): the advantages the batch's own, or given
    (as a trainer computes them for the whole generation batch)."""
    logp, mask = _label_logp(outputs, batch)
    if advantage is None:
        advantage = _advantages(batch, logp.dtype)
    return advantage[:, None] * logp * mask, mask, logp


def gpt_grpo_batch(gen):
    """gpt_batch's 4 completions of 32 tokens (one all padding) with a
    reward each, in two prompt groups of two, interleaved."""
    batch = gpt_batch(gen)
    batch["rewards"] = torch.randn(4, generator=gen)
    batch["group"] = torch.tensor([0, 1, 1, 0])
    return batch


def grpo_token_mean(outputs, batch):
    """GRPO's group-normalized advantages (each completion's reward less its
    group's mean, over its group's standard deviation; the groups' sums as
    one-hot products) weighting the tokens' log-probabilities, DAPO's
    token mean over every completion of the global batch."""
    terms, mask, _ = _grpo_terms(outputs, batch)
    return -terms.sum() / mask.sum()


def grpo_keyed_sums(outputs, batch):
    """grpo_token_mean with the groups' statistics as trainers write them:
    counts by scatter_add, sums by index_add, squares by an in-place
    scatter_add_, each completion's group mean and deviation gathered by
    its group id (ga-import writes the keyed sums as one-hot products)."""
    logp, mask = _label_logp(outputs, batch)
    rewards, group = batch["rewards"].to(logp.dtype), batch["group"]
    zeros = torch.zeros(2, dtype=logp.dtype)
    counts = zeros.scatter_add(0, group, torch.ones_like(rewards))
    mean = zeros.index_add(0, group, rewards) / counts
    square = torch.zeros(2, dtype=logp.dtype)
    square.scatter_add_(0, group, rewards * rewards)
    std = torch.sqrt(square / counts - mean * mean + 1e-6)
    advantage = (rewards - mean[group]) / (std[group] + 1e-4)
    return -(advantage[:, None] * logp * mask).sum() / mask.sum()


def grpo_seq_mean_token_mean(outputs, batch):
    """GRPO's seq-mean-token-mean: each completion's token mean (a row's
    own count, at least 1), then the mean over the completions."""
    terms, mask, _ = _grpo_terms(outputs, batch)
    return -(terms.sum(1) / mask.sum(1).clamp(min=1)).mean()


def dr_grpo(outputs, batch):
    """Dr. GRPO: the sum over tokens, normalized by a constant length
    (the padded sequence length) and the number of completions."""
    terms, _, _ = _grpo_terms(outputs, batch)
    return -terms.sum() / (terms.shape[0] * terms.shape[1])


def grpo_with_kl(outputs, batch):
    """DAPO's token mean plus a KL penalty (k3 estimator, beta 0.04)
    against reference log-probabilities given as data."""
    terms, mask, logp = _grpo_terms(outputs, batch)
    delta = batch["ref_logp"].to(logp.dtype) - logp
    kl = torch.exp(delta) - delta - 1
    return (-terms + 0.04 * kl * mask).sum() / mask.sum()


def grpo_kl_batch(gen):
    batch = grpo_batch(gen)
    batch["ref_logp"] = -4.0 + 0.1 * torch.randn(8, 16, generator=gen)
    return batch


def packed_batch(gen):
    """mlp_batch's rows as packed rows: three documents per row
    (segment ids 0, 1, 2 over the positions; a row whose labels are all
    ignored has no document that counts)."""
    batch = mlp_batch(gen)
    segment = torch.zeros(8, 16, dtype=torch.int64)
    for row in range(8):
        cuts = sorted(torch.randperm(15, generator=gen)[:2].tolist())
        segment[row, cuts[0] + 1:] = 1
        segment[row, cuts[1] + 1:] = 2
    batch["segment"] = segment
    return batch


def packed_document_mean(outputs, batch):
    """Per-document token means within packed rows (each document's own
    count), averaged over every document of the global batch that has a
    valid token."""
    logits = getattr(outputs, "logits", outputs)
    labels = batch["labels"]
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                         labels.reshape(-1), ignore_index=-100,
                         reduction="none").reshape(labels.shape)
    mask = (labels != -100).to(ce.dtype)
    docs = F.one_hot(batch["segment"], 3).to(ce.dtype) * mask[..., None]
    sums = (docs * ce[..., None]).sum(1)
    counts = docs.sum(1)
    present = (counts > 0).to(ce.dtype)
    means = sums / counts.clamp(min=1)
    return (means * present).sum() / present.sum()


def in_batch_contrastive(outputs, batch):
    """An in-batch contrastive loss: each example's mean output scored
    against every example's by a softmax over the batch (its own is the
    positive). One example's loss reads the whole batch: no split can
    compute it, and the step is refused."""
    logits = getattr(outputs, "logits", outputs)
    pooled = logits.mean(1)
    pooled = pooled / pooled.norm(dim=1, keepdim=True)
    scores = pooled @ pooled.t() / 0.1
    return F.cross_entropy(scores, torch.arange(scores.shape[0]))


# What trainers compute under gradient accumulation, for the losses above,
# in PyTorch: each function gives the loss a trainer backpropagates for one
# micro-batch (`mb`, the batch's `rows`) of k, knowing the whole `batch`
# (the advantages, computed for the whole generation batch, and the global
# token count where the trainer has it); the gradients of the k micro-
# batches are summed, as accumulation does.


def _trainer_grpo_terms(outputs, mb, batch, rows):
    return _grpo_terms(outputs, mb,
                       _advantages(batch, torch.float64)[rows])


def global_count_over_steps(outputs, mb, batch, rows, k):
    """The token mean over the global batch's count, divided again by the
    accumulation steps (ms-swift #10117): the gradient over k."""
    terms, _, _ = _trainer_grpo_terms(outputs, mb, batch, rows)
    return -terms.sum() / (batch["labels"] != -100).sum() / k


def micro_batch_count(outputs, mb, batch, rows, k):
    """The micro-batch's own token count (verl #7321, #5625's fallback),
    each micro-batch's loss over the accumulation steps."""
    terms, mask, _ = _trainer_grpo_terms(outputs, mb, batch, rows)
    return -terms.sum() / mask.sum() / k


def micro_batch_means(loss_fn):
    """Each micro-batch's own loss (its own counts and statistics) over
    the accumulation steps: what ga-opt's naive schedule computes."""
    def fn(outputs, mb, batch, rows, k):
        return loss_fn(outputs, mb) / k
    fn.naive = True
    return fn


def balance_per_forward(outputs, mb, batch, rows, k):
    """The cross-entropy over the global count (as trainers have it right
    since 2024), the load balancing loss of each forward call, that is
    each micro-batch's own f_i and P_i, over the accumulation steps."""
    logits, routers = outputs
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                         mb["labels"].reshape(-1), ignore_index=-100,
                         reduction="sum") / (batch["labels"] != -100).sum()
    return ce + _balance(routers) / k


# name: (model, batch, import_step's options). The causal language models
# from transformers are scored as their own loss scores them, on the labels
# shifted by one (shift_labels).
MODELS = {"mlp": (MLP, mlp_batch, {}),
          # attention_tiles: (tile, layers): compiled again with
          # attention-key-tile=tile, every layer's attention raised.
          "nanogpt": (NanoGPT, gpt_batch, {"attention_tiles": (8, 2)}),
          "nanogpt_sdpa": (lambda: NanoGPT(sdpa=True), gpt_batch,
                           {"attention_tiles": (8, 2)}),
          "gpt2": (gpt2, gpt2_batch, {"shift_labels": True}),
          # The attention mask as a key mask of train.attention.
          "gpt2_padded": (gpt2, gpt2_padded_batch,
                          {"shift_labels": True, "attention_tiles": (8, 2)}),
          "llama": (llama, gpt2_batch, {"shift_labels": True}),
          # Grouped-query attention after rotary embeddings: the keys and
          # values repeated to the heads, the queries transposed back.
          "llama_padded": (llama, right_padded_batch,
                           {"shift_labels": True, "attention_tiles": (8, 2)}),
          "bert": (bert, bert_batch, {
              "table": ("masked-LM over the masked 15% (`BertForMaskedLM`)",
                        "", "proves: a token mean over the masked tokens")}),
          # Not causal: the attention mask alone, as a key mask.
          "bert_padded": (bert, bert_padded_batch,
                          {"attention_tiles": (8, 2)}),
          # The loss written in PyTorch (the others: train.cross_entropy).
          "mlp_torch_loss": (MLP, mlp_batch, {
              "loss_fn": token_mean_ce,
              "table": ("token mean of the cross-entropy over valid labels "
                        "(padding)", "transformers (2024), mlx-lm #1413 "
                        "(a fixed K)", "proves: the sum over the global "
                        "count of valid labels"),
              "trainers": [("mlx-lm #1413",
                            micro_batch_means(token_mean_ce))]}),
          "nanogpt_torch_loss": (NanoGPT, gpt_batch,
                                 {"loss_fn": token_mean_ce}),
          # Gradients stopped by .detach() and by torch.no_grad(): their
          # gradients must be PyTorch's, which differ from those of the same
          # loss with the weights attached (checked below).
          "mlp_detach_loss": (MLP, mlp_batch, {
              "loss_fn": confidence_weighted_ce,
              "table": ("a token weight detached with `.detach()`",
                        "(PyTorch's export drops it)",
                        "stops the gradient (`train.stop_gradient`)")}),
          "mlp_no_grad_loss": (MLP, mlp_batch, {
              "loss_fn": confidence_weighted_ce_no_grad,
              "table": ("the same weight computed under `torch.no_grad()`",
                        "(PyTorch's export drops it)",
                        "stops the gradient (`train.stop_gradient`)")}),
          "mlp_attached_loss": (MLP, mlp_batch,
                                {"loss_fn": confidence_weighted_ce_attached}),
          # RL post-training: group-normalized advantages, token mean.
          "mlp_grpo_loss": (MLP, grpo_batch, {
              "loss_fn": grpo_token_mean, "model_inputs": ["x"],
              "loss_scale": 1.0,
              "table": ("DAPO token mean over the global batch, GRPO "
                        "group-normalized advantages (group sums as one-hot "
                        "products)", "TRL #5619 (normalizer over another "
                        "window), ms-swift #10117 (g/4 at GA = 4), verl "
                        "#5625, #7321 (the micro-batch's count)",
                        "proves: the group sums and counts are parameter-"
                        "independent batch sums, computed for the whole "
                        "batch; the token mean becomes sum over the global "
                        "count"),
              "trainers": [("ms-swift #10117", global_count_over_steps),
                           ("verl #7321", micro_batch_count)]}),
          "nanogpt_grpo": (NanoGPT, gpt_grpo_batch, {
              "loss_fn": grpo_token_mean, "model_inputs": ["idx"],
              "loss_scale": 1.0,
              "table": ("the same on a 2-layer GPT (4 completions of 32 "
                        "tokens, groups of 2)", "", "proves"),
              "trainers": [("ms-swift #10117", global_count_over_steps),
                           ("verl #7321", micro_batch_count)]}),
          "mlp_grpo_keyed": (MLP, grpo_batch, {
              "loss_fn": grpo_keyed_sums, "model_inputs": ["x"],
              "loss_scale": 1.0,
              "table": ("the same with the group sums as `scatter_add`, "
                        "`index_add` and `scatter_add_`, gathered by group "
                        "id", "", "proves: ga-import writes keyed sums as "
                        "one-hot products, the analysis reads the gathered "
                        "globals")}),
          "mlp_grpo_seq_mean": (MLP, grpo_batch, {
              "loss_fn": grpo_seq_mean_token_mean, "model_inputs": ["x"],
              "loss_scale": 1.0,
              "table": ("GRPO seq-mean-token-mean", "TRL #5375 (what "
                        "'token-level' means)", "proves: each completion's "
                        "own count, the mean over completions a sum over "
                        "the global batch size")}),
          "mlp_dr_grpo": (MLP, grpo_batch, {
              "loss_fn": dr_grpo, "model_inputs": ["x"], "loss_scale": 1.0,
              "table": ("Dr. GRPO (sum over a constant length)", "",
                        "proves: the constant division runs once on the "
                        "accumulated sum")}),
          "mlp_grpo_kl": (MLP, grpo_kl_batch, {
              "loss_fn": grpo_with_kl, "model_inputs": ["x"],
              "loss_scale": 1.0,
              "table": ("token mean plus a KL penalty (k3) against reference "
                        "log-probabilities given as data", "", "proves")}),
          # Packed rows: documents within rows, each with its own mean.
          "mlp_packed_docs": (MLP, packed_batch, {
              "loss_fn": packed_document_mean, "model_inputs": ["x"],
              "table": ("per-document means in packed rows (3 documents a "
                        "row, segment ids)", "google/tunix #1662, NeMo "
                        "#15339", "proves: each document's count is its "
                        "own, the documents' count a global sum"),
              "trainers": [("NeMo #15339",
                            micro_batch_means(packed_document_mean))]}),
          "mlp_packed_token_mean": (MLP, packed_batch, {
              "loss_fn": token_mean_ce, "model_inputs": ["x"],
              "table": ("token mean over packed rows", "NeMo #15339",
                        "proves: the sum over the global count of valid "
                        "labels"),
              "trainers": [("NeMo #15339",
                            micro_batch_means(token_mean_ce))]}),
          # A mixture of experts: the router's z-loss (exact) and the
          # global-batch load balancing (with the statistics pre-pass).
          "moe_z_loss": (NanoMoE, gpt_batch, {
              "loss_fn": moe_z_loss,
              "table": ("router z-loss of a mixture of experts (2-layer GPT, "
                        "4 experts, top-1 routing)", "",
                        "proves (a token mean)")}),
          "moe_balance_loss": (NanoMoE, gpt_batch, {
              "loss_fn": moe_balance_loss,
              "pipeline": "batch-statistics=prepass",
              "remat_budget": 4400000,
              "table": ("global-batch load balancing, 0.01 E sum_i f_i P_i "
                        "(the same model)", "torchtitan #3000 (refused), "
                        "#4772 (rolling counts, incompatible with "
                        "checkpointing)", "with `batch-statistics=prepass`: "
                        "the routing fractions f_i (parameter-dependent, no "
                        "gradient: an argmax's one-hot) computed for the "
                        "whole batch before the micro-batches, in a loop "
                        "over them, and all-reduced; without it, refused at the product, "
                        "naming the option (`moe_balance_refused`)"),
              "trainers": [("per forward call (transformers' Mixtral)",
                            balance_per_forward)]}),
          "moe_balance_refused": (NanoMoE, gpt_batch,
                                  {"loss_fn": moe_balance_loss,
                                   "refused": "batch-statistics=prepass "
                                              "computes it"}),
          # The boundary: refused at every split, with the reason.
          "mlp_contrastive": (MLP, mlp_batch, {
              "loss_fn": in_batch_contrastive,
              "refused": "combines different examples",
              "table": ("in-batch contrastive (a softmax over the batch)", "",
                        "refuses, at the product that combines examples: "
                        "\"this operation combines different examples\"")})}


def reference(model, batch, names, shift_labels=False, loss_fn=None,
              model_inputs=None):
    """The float64 loss and gradients (in `names` order): PyTorch's autograd
    of the imported loss (`loss_fn`, else the cross-entropy)."""
    def loss(outputs, mb, whole, rows, k):
        if loss_fn:
            return loss_fn(outputs, mb)
        logits = getattr(outputs, "logits", outputs)
        labels = mb["labels"]
        if shift_labels:
            logits, labels = logits[:, :-1], labels[:, 1:]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               labels.reshape(-1), ignore_index=-100)
    return trainer_reference(model, batch, names, loss, 1, model_inputs)


def trainer_reference(model, batch, names, fn, k, model_inputs=None):
    """The float64 loss and gradients a trainer accumulates: the sum over k
    micro-batches (consecutive rows, as ga-opt splits) of `fn`'s loss and
    its gradients, in `names` order (a parameter the loss does not read has
    a zero gradient)."""
    m64 = {n: v.detach().double().requires_grad_(True)
           for n, v in model.named_parameters()}
    model.double()
    size = next(iter(batch.values())).shape[0]
    loss, grads = 0.0, [torch.zeros_like(m64[n]) for n in names]
    for j in range(k):
        rows = slice(j * size // k, (j + 1) * size // k)
        mb = {n: v[rows] for n, v in batch.items()}
        inputs = {n: (v.double() if v.is_floating_point() else v)
                  for n, v in mb.items()
                  if n != "labels" and (model_inputs is None
                                        or n in model_inputs)}
        outputs = torch.func.functional_call(model, m64, (), inputs)
        part = fn(outputs, mb, batch, rows, k)
        loss += float(part.detach())
        for g, d in zip(grads, torch.autograd.grad(
                part, [m64[n] for n in names], allow_unused=True)):
            if d is not None:
                g += d
    model.float()
    return loss, [g.numpy() for g in grads]


def check_attention_tiles(name, step, work, ga_opt, run, check, printed, got,
                          loss64, grads64, floor, tile, layers):
    """The importer's attention raised (train-raise-attention) and computed
    over tiles of `tile` keys, then as one call of the runtime's fused
    attention (attention=library): every layer's attention becomes one
    train.attention; the loss and gradients stay within 1e-5 of PyTorch's
    float64 (and differ from the step as written: the tiles or the call
    ran); k = 2 micro-batches give the k = 1 step's bits; the measured peak
    falls."""
    src = os.path.join(work, "k1.mlir")
    done = subprocess.run([ga_opt, src, "--ga-legalize-import",
                           f"--train-raise-attention=key-tile={tile}"],
                          capture_output=True, text=True)
    raised = done.stdout.count("train.attention ")
    check(f"{name}: train-raise-attention raises {raised} attentions "
          f"(expected {layers})", done.returncode == 0 and raised == layers,
          done.stderr[-2000:])
    for form, more in ((f"tiles of {tile} queries and keys",
                        f"attention-key-tile={tile}"),
                       ("one fused call (attention=library)",
                        "attention=library")):
        tag = "k1-library" if "library" in more else "k1-tiles"
        tiled = run(tag, step.mlir, more=more, run_flags=("--report-memory",))
        if tiled is None:
            return
        err = max([abs(float(tiled[0]) - loss64) / abs(loss64)] +
                  [np.linalg.norm(g - g64) / max(np.linalg.norm(g64), floor)
                   for g, g64 in zip(tiled[1:], grads64)])
        check(f"{name}: {form}: loss and gradients within "
              f"{err:.2e} of float64 (tolerance 1e-5)", err <= 1e-5)
        check(f"{name}: {form}: not the bits of the step as written",
              not all(np.array_equal(a, b) for a, b in zip(tiled, got)))
        split = run(tag.replace("k1", "k2"), step.reschedule(2).mlir,
                    more=more)
        if split is not None:
            check(f"{name}: {form}: k = 2 bitwise k = 1",
                  all(np.array_equal(a, b) for a, b in zip(split, tiled)))
        peaks = [int(re.search(r"step_peak_bytes: (\d+)", printed[t])
                     .group(1)) for t in ("k1", tag)]
        check(f"{name}: {form}: the step's measured peak "
              f"{peaks[0]} -> {peaks[1]} B", peaks[1] < peaks[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("--ga-opt", "--ga-run", "--python", "--workdir"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--splits", action="store_true")
    parser.add_argument("--mpirun", default="")
    parser.add_argument("--table", help="writes the loss table's measured "
                        "rows (JSON) for scripts/loss_table.py")
    args = parser.parse_args()

    failures = checks = 0
    table = []

    def check(what, ok, detail=""):
        nonlocal failures, checks
        checks += 1
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} import: {what}"
              + ("" if ok else f": {detail}"))

    for name in args.models.split(","):
        make, make_batch, options = MODELS[name]
        gen = torch.Generator().manual_seed(0)
        torch.manual_seed(0)
        model = make()
        batch = make_batch(gen)
        work = os.path.join(args.workdir, name)
        os.makedirs(work, exist_ok=True)
        options = dict(options)
        refused = options.pop("refused", None)
        loss_scale = options.pop("loss_scale", 0.0)
        # Exact but not yet bitwise at k = 2, 4: within this tolerance.
        split_tolerance = options.pop("split_tolerance", 0.0)
        # A memory budget that makes train-plan-remat checkpoint the k = 4
        # step: the same bits as without it.
        remat_budget = options.pop("remat_budget", 0)
        # Options of the pipeline the model's steps need.
        extra = options.pop("pipeline", "")
        # The docs' table: (loss, trainers' issues, what ga-opt does) and
        # the trainers' formulas, measured below.
        described = options.pop("table", None)
        trainers = options.pop("trainers", [])
        attention_tiles = options.pop("attention_tiles", None)
        row = {"name": name, "pipeline": extra}
        if described:
            row.update(zip(("loss", "issues", "ga_opt"), described))
            table.append(row)
        step = ga_import.import_step(model, batch, ga_opt=args.ga_opt,
                                     **options)
        check(f"{name}: imported as one train.step",
              step.mlir.count("train.step") == 1, step.mlir[:2000])
        paths = []
        for i, t in enumerate(step.arguments()):
            paths.append(os.path.join(work, f"arg{i}.npy"))
            np.save(paths[-1], t.numpy())

        compiled = {}

        printed = {}

        def run(tag, text, flags=(), launcher="", more="", run_flags=()):
            """Compiles `text` (with the pipeline options `more`) and runs
            it on the example (ga-run with `run_flags`): the results, or
            None (a failed check) when either fails. The compiler's
            messages: compiled[tag]; ga-run's output: printed[tag]."""
            src = os.path.join(work, f"{tag}.mlir")
            with open(src, "w") as f:
                f.write(text)
            lowered = os.path.join(work, f"{tag}.lowered.mlir")
            pipeline = "--ga-pipeline=target=cpu" + (
                " naive=true" if "--naive" in flags else "") + (
                " " + extra if extra else "") + (" " + more if more else "")
            done = subprocess.run([args.ga_opt, src, pipeline, "-o", lowered],
                                  capture_output=True, text=True)
            compiled[tag] = done.stderr
            check(f"{name}: {tag} compiles", done.returncode == 0,
                  done.stderr[-3000:])
            if done.returncode:
                return None
            out = os.path.join(work, f"{tag}.out")
            done = subprocess.run(shlex.split(launcher) + [
                args.ga_run, lowered, *paths, "--out-dir", out,
                *run_flags], capture_output=True, text=True)
            printed[tag] = done.stdout
            check(f"{name}: {tag} runs", done.returncode == 0,
                  done.stderr[-3000:])
            if done.returncode:
                return None
            count = int(re.search(r"wrote (\d+) result", done.stdout)
                        .group(1))
            return [np.load(os.path.join(out, f"result{i}.npy"))
                    for i in range(count)]

        memory = ("--report-memory",) if attention_tiles else ()
        got = run("k1", step.mlir, run_flags=memory)
        if got is None:
            continue
        loss64, grads64 = reference(model, batch, step.param_names,
                                    options.get("shift_labels", False),
                                    options.get("loss_fn"),
                                    options.get("model_inputs"))
        if options.get("loss_fn") in (confidence_weighted_ce,
                                      confidence_weighted_ce_no_grad):
            # The stopped gradient matters: the attached loss's gradient is
            # far from this one (so that differentiating through the weight
            # would fail the checks below).
            _, attached = reference(model, batch, step.param_names,
                                    loss_fn=confidence_weighted_ce_attached)
            apart = min(np.linalg.norm(a - g) / np.linalg.norm(g)
                        for a, g in zip(attached, grads64))
            check(f"{name}: the attached weights' gradient differs by "
                  f"{apart:.2e} (at least 1e-2)", apart >= 1e-2)
        # GRPO's advantages are zero-mean in each group, so that its loss
        # is a small difference of terms of size about 1: its float32
        # rounding is measured against that size (loss_scale).
        err = abs(float(got[0]) - loss64) / max(abs(loss64), loss_scale)
        row["float64"] = err
        check(f"{name}: loss {float(got[0]):.7f} against float64 "
              f"{loss64:.7f}: relative error {err:.2e} (tolerance 1e-5)",
              err <= 1e-5)
        # A gradient that is zero in exact arithmetic (BERT's key biases:
        # softmax ignores a shift common to all keys) is float32 rounding
        # noise against float64 noise: errors are relative to the larger of
        # its norm and 1e-4 of the norm of all gradients.
        floor = 1e-4 * np.sqrt(sum(np.sum(g ** 2) for g in grads64))
        for pname, g, g64 in zip(step.param_names, got[1:], grads64):
            err = np.linalg.norm(g - g64) / max(np.linalg.norm(g64), floor)
            check(f"{name}: gradient of {pname}: relative error {err:.2e} "
                  "(tolerance 1e-5)", err <= 1e-5 and g.shape == g64.shape,
                  f"shape {g.shape}, expected {g64.shape}")
            row["float64"] = max(row["float64"], err)
        if attention_tiles:
            check_attention_tiles(name, step, work, args.ga_opt, run, check,
                                  printed, got, loss64, grads64, floor,
                                  *attention_tiles)
        if not args.splits:
            continue

        def worst(results):
            """The largest difference to the full batch, each relative to
            the larger of its norm and the floor above (the loss's: and
            loss_scale)."""
            return max(np.linalg.norm(a - b) / max(
                np.linalg.norm(b), floor if i else max(floor, loss_scale))
                for i, (a, b) in enumerate(zip(results, got)))

        def off_full(results, full):
            """worst() against float64 results of the full batch."""
            return max(np.linalg.norm(np.asarray(a) - b) / max(
                np.linalg.norm(b), floor if i else max(floor, loss_scale))
                for i, (a, b) in enumerate(zip(results, full)))

        # The trainers' own formulas (PyTorch, float64) at k = 4, against
        # the full batch's float64 loss and gradients.
        trainer_results = {}
        row["trainers"] = []
        for label, fn in trainers:
            trainer_results[label] = trainer_reference(
                model, batch, step.param_names, fn, 4,
                options.get("model_inputs"))
            loss4, grads4 = trainer_results[label]
            off = off_full([loss4] + grads4, [loss64] + grads64)
            row["trainers"].append([label, off])
            # (NaN: a micro-batch without valid tokens, divided by its
            # count, as the trainer's code does.)
            check(f"{name}: {label}'s formula at k = 4 is off by {off:.2e} "
                  "(more than 1e-6, or not a number)",
                  off > 1e-6 or not np.isfinite(off))
        if refused:
            row.update(split="refused", ranks="refused")
            # Every split refused, at the operation, saying why.
            src = os.path.join(work, "k2.mlir")
            with open(src, "w") as f:
                f.write(step.reschedule(2).mlir)
            done = subprocess.run([args.ga_opt, src,
                                   "--ga-pipeline=target=cpu", "-o",
                                   os.devnull], capture_output=True,
                                  text=True)
            # At the line of the model or the loss that made the operation
            # (ga-import keeps the export's locations of the user's code).
            located = re.search(r"\.py:\d+:\d+: error: .*" +
                                re.escape(refused), done.stderr)
            check(f"{name}: k = 2 refused at the operation's line in the "
                  f"model or the loss ('{refused}')",
                  done.returncode != 0 and located is not None,
                  done.stderr[-2000:])
            continue
        row["split"] = 0.0
        for k in (2, 4):
            split = run(f"k{k}", step.reschedule(k).mlir)
            if split is not None:
                row["split"] = max(row["split"], worst(split))
                if split_tolerance:
                    off = worst(split)
                    check(f"{name}: k = {k} micro-batches within {off:.2e} "
                          f"of the full batch (tolerance {split_tolerance})",
                          off <= split_tolerance)
                    continue
                same = all(np.array_equal(a, b) for a, b in zip(split, got))
                check(f"{name}: k = {k} micro-batches bitwise the full batch",
                      same, f"worst relative difference {worst(split):.2e}")
        if remat_budget and split is not None:
            planned = run("k4-remat", step.reschedule(4).mlir,
                          more=f"memory-budget={remat_budget}")
            chosen = re.search(r"(\d+) checkpoints over \d+ units",
                               compiled["k4-remat"])
            check(f"{name}: k = 4 under memory-budget={remat_budget}: "
                  "checkpoints chosen", chosen is not None
                  and int(chosen.group(1)) > 0, compiled["k4-remat"][-2000:])
            if planned is not None:
                same = all(np.array_equal(a, b)
                           for a, b in zip(planned, split))
                check(f"{name}: k = 4 with checkpoints bitwise the same "
                      "step without", same)
        naive = run("naive-k4", step.reschedule(4).mlir, ("--naive",))
        if naive is not None:
            # NaN where a micro-batch has no valid label (a mean of 0/0),
            # as PyTorch's own naive accumulation gives.
            off = worst(naive)
            row["naive"] = off
            check(f"{name}: the naive k = 4 split is off by {off:.2e} "
                  "(more than 1e-6, or not a number)",
                  off > 1e-6 or not np.isfinite(off))
            # Where a trainer's formula is the naive schedule's (each
            # micro-batch's own loss over k), ga-opt's naive results are
            # that formula's, computed by PyTorch in float64.
            for label, fn in trainers:
                if getattr(fn, "naive", False):
                    loss4, grads4 = trainer_results[label]
                    err = off_full(naive, [loss4] + grads4)
                    check(f"{name}: the naive split computes {label}'s "
                          f"formula: within {err:.2e} of PyTorch's float64 "
                          "(tolerance 1e-5)", err <= 1e-5)
        if args.mpirun:
            # r = 2 ranks at k = 1, 2, 4 micro-batches each, where the
            # batch divides (4 rows: not r = 2 x k = 4).
            rows = next(iter(batch.values())).shape[0]
            for k in (1, 2, 4):
                if rows % (2 * k):
                    continue
                ranks = run(f"r2k{k}", step.reschedule(k, 2).mlir,
                            launcher=args.mpirun + " -np 2")
                if ranks is not None:
                    off = worst(ranks)
                    row["ranks"] = max(row.get("ranks", 0.0), off)
                    check(f"{name}: r = 2 ranks x k = {k} micro-batches "
                          f"within {off:.2e} of the full batch (tolerance "
                          "1e-6)", off <= 1e-6)
    if args.table:
        table.sort(key=lambda row: list(MODELS).index(row["name"]))
        with open(args.table, "w") as f:
            json.dump(table, f, indent=1, default=float)
    print(f"import: {checks - failures} of {checks} checks passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
