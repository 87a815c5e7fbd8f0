"""The tiny GPT of `examples/gen_tiny_gpt.py`, written once for the
benchmarks and the tests that use it: its sizes, its inputs, its FLOPs and
the same model in PyTorch (the baseline that the CPU benchmark,
`bench_models.py`, and the GPU benchmark, `bench_cuda.py`, time against
ga-opt's step).

The parameters, in the generator's argument order: wte [V, D], wpe [S, D],
then per layer (stacked over L) ln1 gain and bias, the fused q/k/v
projection [D, 3D], the output projection [D, D], ln2 gain and bias, the
MLP's [D, F] and bias, its [F, D] and bias; the final norm's gain and bias
and the head [D, V]. The tokens and labels follow ([B, S] int64, the last
quarter of each row's labels -100: padding).
"""

import math
import os
import subprocess
import sys

import numpy as np

from .paths import ROOT

SIZES = {  # B, S, V, D, H, F, L
    "tiny": (8, 16, 32, 16, 2, 64, 2),
    "small": (8, 64, 256, 64, 4, 256, 2),
    "medium": (8, 128, 512, 128, 4, 512, 4),
    "deep": (4, 64, 256, 64, 4, 256, 12),
    "deep24": (4, 64, 256, 64, 4, 256, 24),
    # GPT-2 124M's shape (V padded to 50304 as llm.c does), 4, 8 and 16
    # sequences of 1024 tokens (llm.c's and the goals' batches).
    "gpt2": (4, 1024, 50304, 768, 12, 3072, 12),
    "gpt2_b8": (8, 1024, 50304, 768, 12, 3072, 12),
    "gpt2_b16": (16, 1024, 50304, 768, 12, 3072, 12),
}
# Parameters are normal * std: 0.3 at the small sizes, GPT-2's 0.02 at its
# own.
INIT_STD = {"gpt2": 0.02, "gpt2_b8": 0.02, "gpt2_b16": 0.02}


def std_of(name):
    return INIT_STD.get(name, 0.3)


# The parameters' names, in the step's order (examples/gen_tiny_gpt.py).
PARAM_NAMES = ["wte", "wpe", "ln1_g", "ln1_b", "w_qkv", "w_o", "ln2_g",
               "ln2_b", "w_fc", "b_fc", "w_proj", "b_proj", "lnf_g", "lnf_b",
               "w_head"]


def param_shapes(B, S, V, D, H, F, L):
    return [[V, D], [S, D], [L, D], [L, D], [L, D, 3 * D], [L, D, D],
            [L, D], [L, D], [L, D, F], [L, F], [L, F, D], [L, D], [D], [D],
            [D, V]]


def inputs(B, S, V, D, H, F, L, rng, std=0.3):
    """(parameters, tokens, labels) drawn from `rng`: float32 normals
    times `std` (drawn in float32, so that GPT-2's 500 MB of parameters
    are never float64), the norms' gains around 1."""
    params = [rng.standard_normal(s, dtype=np.float32) * np.float32(std)
              for s in param_shapes(B, S, V, D, H, F, L)]
    for i in (2, 6, 12):  # LayerNorm gains around 1
        params[i] = params[i] + 1.0
    tokens = rng.integers(0, V, (B, S)).astype(np.int64)
    labels = rng.integers(0, V, (B, S)).astype(np.int64)
    labels[:, S - S // 4:] = -100
    return params, tokens, labels


def write_step(path, size, *flags):
    """Writes the generator's training step of `size` (B, S, V, D, H, F, L)
    to `path` (examples/gen_tiny_gpt.py with `flags` added)."""
    B, S, V, D, H, F, L = size
    with open(path, "w") as f:
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "examples", "gen_tiny_gpt.py"),
             f"--batch={B}", f"--seq={S}", f"--vocab={V}", f"--dim={D}",
             f"--heads={H}", f"--ffn={F}", f"--layers={L}", *flags],
            stdout=f, check=True)
    return path


def step_flops(size):
    """The work of one training step, forward and backward, as nanoGPT and
    PaLM count it: 6 per weight of the products (blocks and head;
    embeddings, norms and biases aside) and 12 * L * D * S for the
    attention's two products, per token (the causal mask not halved); the
    same as 3x the multiply-adds of the forward contractions."""
    B, S, V, D, H, F, L = size
    weights = L * (3 * D * D + D * D + 2 * D * F) + D * V
    return (6 * weights + 12 * L * D * S) * B * S


def torch_model(torch, size, arrays, device="cpu", checkpoint=False):
    """The model in PyTorch on `device`: (its parameters as leaf tensors
    that require gradients, a function returning the loss). The loss is
    the token mean of the next-token cross entropy over the labels that
    are not -100, as the generator's step computes it. With `checkpoint`,
    each layer goes through torch.utils.checkpoint (recomputed in the
    backward pass)."""
    B, S, V, D, H, F, L = size
    DH = D // H
    dev = torch.device(device)
    if checkpoint:
        import torch.utils.checkpoint
    p = [torch.tensor(a, device=dev, requires_grad=True)
         for a in arrays[:15]]
    (wte, wpe, ln1g, ln1b, wqkv, wo, ln2g, ln2b, wfc, bfc, wpr, bpr, lnfg,
     lnfb, whead) = p
    tok = torch.tensor(arrays[15], device=dev)
    lab = torch.tensor(arrays[16], device=dev)
    causal = torch.triu(torch.ones(S, S, dtype=torch.bool, device=dev), 1)

    def ln(x, g, b):
        return torch.nn.functional.layer_norm(x, (D,), g, b, 1e-5)

    def layer(x, l):
        h = ln(x, ln1g[l], ln1b[l])
        q, k, v = (h @ wqkv[l]).split(D, dim=1)
        q, k, v = (t.reshape(B, S, H, DH).transpose(1, 2)
                   for t in (q, k, v))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(DH)
        s = s.masked_fill(causal, -1e9)
        a = torch.softmax(s, dim=-1) @ v
        x = x + a.transpose(1, 2).reshape(B * S, D) @ wo[l]
        h = ln(x, ln2g[l], ln2b[l])
        m = torch.nn.functional.gelu(h @ wfc[l] + bfc[l]) @ wpr[l]
        return x + m + bpr[l]

    def forward():
        x = (wte[tok] + wpe).reshape(B * S, D)
        for l in range(L):
            if checkpoint:
                x = torch.utils.checkpoint.checkpoint(layer, x, l,
                                                      use_reentrant=False)
            else:
                x = layer(x, l)
        logits = (ln(x, lnfg, lnfb) @ whead).reshape(B, S, V)
        return torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, V), lab[:, 1:].reshape(-1),
            ignore_index=-100)

    return p, forward
