#!/usr/bin/env python3
"""Writes examples/tiny_gpt.mlir, a tiny GPT training step in train + linalg.

The model: token and position embeddings, L pre-LayerNorm transformer blocks
(causal multi-head self-attention and a GELU MLP, both residual), a final
LayerNorm, an LM head, and a token-level cross-entropy (mean, ignore_index
-100) on the labels shifted by one: the logits of positions 0..S-2 predict the
labels of positions 1..S-1. Padding positions carry the label -100.

The per-layer weights are stacked along a leading layer dimension and sliced
per block (tensor.extract_slice), as scan-style models do.

Run `python3 examples/gen_tiny_gpt.py > examples/tiny_gpt.mlir` after a change;
test/Examples/tiny-gpt-current.test checks that the committed file is current.
"""

import argparse
import math
import sys

# Sizes of the example (small on purpose: the tests differentiate and run it).
B, S, V, D, H, F, L = 8, 16, 32, 16, 2, 64, 2
DH = D // H
N = B * S          # tokens
NP = B * (S - 1)   # tokens whose next-token label the loss consumes
LN_EPS = 1e-5
CHECKPOINT = False  # --checkpoint
TRAIN = False  # --train


def set_sizes(batch=None, seq=None, vocab=None, dim=None, heads=None,
              ffn=None, layers=None):
    """--batch, --seq, ...: the sizes (those not given keep their defaults)
    and everything derived from them."""
    global B, S, V, D, H, F, L, DH, N, NP, BATCH, PARAMS
    B = batch or B
    S = seq or S
    V = vocab or V
    D = dim or D
    H = heads or H
    F = ffn or F
    L = layers or L
    if D % H != 0:
        raise SystemExit(f"gen_tiny_gpt.py: --dim ({D}) must be a multiple "
                         f"of --heads ({H})")
    if S < 2:
        raise SystemExit(f"gen_tiny_gpt.py: --seq must be at least 2, got {S}")
    DH = D // H
    N, NP = B * S, B * (S - 1)
    BATCH = [("tokens", [B, S], "i64"), ("labels", [B, S], "i64")]
    PARAMS = param_shapes()


class Emitter:
    """Collects lines of MLIR and hands out fresh SSA names."""

    def __init__(self):
        self.lines = []
        self.counter = 0
        self.indent = "    "
        # The constants that fills use (redefined inside checkpoint regions,
        # which are isolated from above).
        self.zero = "%zero"
        self.lowest = "%lowest"

    def fresh(self, hint):
        self.counter += 1
        return f"%{hint}{self.counter}"

    def emit(self, text):
        for line in text.strip("\n").split("\n"):
            self.lines.append(self.indent + line if line else "")

    def comment(self, text):
        self.emit(f"// {text}")


def tt(shape, ety="f32"):
    """A tensor type."""
    if not shape:
        return f"tensor<{ety}>"
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{ety}>"


def amap(dims, results):
    return f"affine_map<({', '.join(dims)}) -> ({', '.join(results)})>"


def generic(e, hint, ins, out_shape, maps, iters, body, init=None,
            out_ety="f32"):
    """A linalg.generic. ins: [(value, shape)] or [(value, shape, ety)] (f32
    unless given); maps: one per input + output; body: lines using %in0.. and
    %out; it must end in linalg.yield."""
    ins = [(i[0], i[1], i[2] if len(i) > 2 else "f32") for i in ins]
    res = e.fresh(hint)
    if init is None:
        init = e.fresh("empty")
        e.emit(f"{init} = tensor.empty() : {tt(out_shape, out_ety)}")
    args = ", ".join(f"%in{i}: {ety}" for i, (_, _, ety) in enumerate(ins))
    args = (args + ", " if args else "") + f"%out: {out_ety}"
    ins_text = ""
    if ins:
        ins_text = (f"ins({', '.join(v for v, _, _ in ins)} : "
                    f"{', '.join(tt(s, ety) for _, s, ety in ins)})\n    ")
    iters_text = ", ".join(f'"{it}"' for it in iters)
    maps_text = ",\n                     ".join(maps)
    e.emit(f"""{res} = linalg.generic {{
    indexing_maps = [{maps_text}],
    iterator_types = [{iters_text}]}}
    {ins_text}outs({init} : {tt(out_shape, out_ety)}) {{
^bb0({args}):""")
    e.emit("\n".join("  " + line for line in body.strip().split("\n")))
    e.emit(f"}} -> {tt(out_shape, out_ety)}")
    return res


def zeros(e, shape):
    empty = e.fresh("empty")
    res = e.fresh("zeros")
    e.emit(f"{empty} = tensor.empty() : {tt(shape)}")
    e.emit(f"{res} = linalg.fill ins({e.zero} : f32) outs({empty} : {tt(shape)})"
           f" -> {tt(shape)}")
    return res


def matmul(e, a, b, m, k, n, hint="mm"):
    acc = zeros(e, [m, n])
    res = e.fresh(hint)
    e.emit(f"{res} = linalg.matmul ins({a}, {b} : {tt([m, k])}, {tt([k, n])})"
           f" outs({acc} : {tt([m, n])}) -> {tt([m, n])}")
    return res


def add_bias(e, x, bias, m, n, hint="biased"):
    return generic(
        e, hint, [(x, [m, n]), (bias, [n])], [m, n],
        [amap(["i", "j"], ["i", "j"]), amap(["i", "j"], ["j"]),
         amap(["i", "j"], ["i", "j"])],
        ["parallel", "parallel"],
        "%s = arith.addf %in0, %in1 : f32\nlinalg.yield %s : f32")


def add(e, x, y, shape, hint="sum"):
    ids = [f"d{i}" for i in range(len(shape))]
    return generic(
        e, hint, [(x, shape), (y, shape)], shape,
        [amap(ids, ids)] * 3, ["parallel"] * len(shape),
        "%s = arith.addf %in0, %in1 : f32\nlinalg.yield %s : f32")


def row_sum(e, x, m, n, hint="rowsum"):
    """sum over j of x[i, j] -> [m]."""
    acc = zeros(e, [m])
    return generic(
        e, hint, [(x, [m, n])], [m],
        [amap(["i", "j"], ["i", "j"]), amap(["i", "j"], ["i"])],
        ["parallel", "reduction"],
        "%s = arith.addf %in0, %out : f32\nlinalg.yield %s : f32", init=acc)


def layer_norm(e, x, gamma, beta, m, n, hint):
    """LayerNorm over the last dimension of x [m, n]."""
    e.comment(f"LayerNorm ({hint}) over the {n} features of each token.")
    mean_sum = row_sum(e, x, m, n, hint + "_sum")
    centered = generic(
        e, hint + "_centered", [(x, [m, n]), (mean_sum, [m])], [m, n],
        [amap(["i", "j"], ["i", "j"]), amap(["i", "j"], ["i"]),
         amap(["i", "j"], ["i", "j"])],
        ["parallel", "parallel"],
        f"%inv = arith.constant {1.0 / n:.17e} : f32\n"
        "%mean = arith.mulf %in1, %inv : f32\n"
        "%c = arith.subf %in0, %mean : f32\nlinalg.yield %c : f32")
    sq = generic(
        e, hint + "_sq", [(centered, [m, n])], [m, n],
        [amap(["i", "j"], ["i", "j"])] * 2, ["parallel", "parallel"],
        "%s = arith.mulf %in0, %in0 : f32\nlinalg.yield %s : f32")
    var_sum = row_sum(e, sq, m, n, hint + "_varsum")
    return generic(
        e, hint, [(centered, [m, n]), (var_sum, [m]), (gamma, [n]),
                  (beta, [n])], [m, n],
        [amap(["i", "j"], ["i", "j"]), amap(["i", "j"], ["i"]),
         amap(["i", "j"], ["j"]), amap(["i", "j"], ["j"]),
         amap(["i", "j"], ["i", "j"])],
        ["parallel", "parallel"],
        f"%inv = arith.constant {1.0 / n:.17e} : f32\n"
        f"%eps = arith.constant {LN_EPS:.17e} : f32\n"
        "%var = arith.mulf %in1, %inv : f32\n"
        "%ve = arith.addf %var, %eps : f32\n"
        "%r = math.rsqrt %ve : f32\n"
        "%n = arith.mulf %in0, %r : f32\n"
        "%g = arith.mulf %n, %in2 : f32\n"
        "%y = arith.addf %g, %in3 : f32\nlinalg.yield %y : f32")


def layer_slice(e, stacked, layer, shape, hint):
    """Rank-reducing slice of layer `layer` from a [L, ...] parameter."""
    res = e.fresh(hint)
    offsets = ", ".join([str(layer)] + ["0"] * len(shape))
    sizes = ", ".join(["1"] + [str(d) for d in shape])
    strides = ", ".join(["1"] * (len(shape) + 1))
    e.emit(f"{res} = tensor.extract_slice {stacked}[{offsets}] [{sizes}] "
           f"[{strides}] : {tt([L] + shape)} to {tt(shape)}")
    return res


def attention(e, x, layer, w_qkv, w_o):
    e.comment(f"Block {layer}: causal self-attention, {H} heads of {DH}.")
    wqkv = layer_slice(e, w_qkv, layer, [D, 3 * D], "wqkv")
    wo = layer_slice(e, w_o, layer, [D, D], "wo")
    qkv = matmul(e, x, wqkv, N, D, 3 * D, "qkv")
    heads = []
    for part, name in enumerate(["q", "k", "v"]):
        flat = e.fresh(name)
        e.emit(f"{flat} = tensor.extract_slice {qkv}[0, {part * D}] [{N}, {D}]"
               f" [1, 1] : {tt([N, 3 * D])} to {tt([N, D])}")
        split = e.fresh(name + "h")
        e.emit(f"{split} = tensor.expand_shape {flat} [[0, 1], [2, 3]] "
               f"output_shape [{B}, {S}, {H}, {DH}] : {tt([N, D])} into "
               f"{tt([B, S, H, DH])}")
        heads.append(split)
    q, k, v = heads
    # scores[b, h, i, j] = scale * sum_d q[b, i, h, d] * k[b, j, h, d]
    scores_acc = zeros(e, [B, H, S, S])
    dims = ["b", "h", "i", "j", "d"]
    scores = generic(
        e, "scores", [(q, [B, S, H, DH]), (k, [B, S, H, DH])], [B, H, S, S],
        [amap(dims, ["b", "i", "h", "d"]), amap(dims, ["b", "j", "h", "d"]),
         amap(dims, ["b", "h", "i", "j"])],
        ["parallel"] * 4 + ["reduction"],
        f"%scale = arith.constant {1.0 / math.sqrt(DH):.17e} : f32\n"
        "%p = arith.mulf %in0, %in1 : f32\n"
        "%ps = arith.mulf %p, %scale : f32\n"
        "%s = arith.addf %out, %ps : f32\nlinalg.yield %s : f32",
        init=scores_acc)
    d4 = ["b", "h", "i", "j"]
    masked = generic(
        e, "masked", [(scores, [B, H, S, S])], [B, H, S, S],
        [amap(d4, d4)] * 2, ["parallel"] * 4,
        "%i = linalg.index 2 : index\n%j = linalg.index 3 : index\n"
        "%future = arith.cmpi ugt, %j, %i : index\n"
        "%neg = arith.constant -1.0e+09 : f32\n"
        "%m = arith.select %future, %neg, %in0 : f32\nlinalg.yield %m : f32")
    # Softmax over j, stabilised by the row maximum.
    mx_empty = e.fresh("empty")
    mx_init = e.fresh("mxinit")
    e.emit(f"{mx_empty} = tensor.empty() : {tt([B, H, S])}")
    e.emit(f"{mx_init} = linalg.fill ins({e.lowest} : f32) outs({mx_empty} : "
           f"{tt([B, H, S])}) -> {tt([B, H, S])}")
    d3 = ["b", "h", "i"]
    row_max = generic(
        e, "rowmax", [(masked, [B, H, S, S])], [B, H, S],
        [amap(d4, d4), amap(d4, d3)], ["parallel"] * 3 + ["reduction"],
        "%m = arith.maximumf %in0, %out : f32\nlinalg.yield %m : f32",
        init=mx_init)
    expd = generic(
        e, "exp", [(masked, [B, H, S, S]), (row_max, [B, H, S])], [B, H, S, S],
        [amap(d4, d4), amap(d4, d3), amap(d4, d4)], ["parallel"] * 4,
        "%c = arith.subf %in0, %in1 : f32\n%x = math.exp %c : f32\n"
        "linalg.yield %x : f32")
    den_acc = zeros(e, [B, H, S])
    den = generic(
        e, "den", [(expd, [B, H, S, S])], [B, H, S],
        [amap(d4, d4), amap(d4, d3)], ["parallel"] * 3 + ["reduction"],
        "%s = arith.addf %in0, %out : f32\nlinalg.yield %s : f32",
        init=den_acc)
    probs = generic(
        e, "probs", [(expd, [B, H, S, S]), (den, [B, H, S])], [B, H, S, S],
        [amap(d4, d4), amap(d4, d3), amap(d4, d4)], ["parallel"] * 4,
        "%p = arith.divf %in0, %in1 : f32\nlinalg.yield %p : f32")
    # out[b, i, h, d] = sum_j probs[b, h, i, j] * v[b, j, h, d]
    ctx_acc = zeros(e, [B, S, H, DH])
    dims = ["b", "i", "h", "d", "j"]
    ctx = generic(
        e, "ctx", [(probs, [B, H, S, S]), (v, [B, S, H, DH])], [B, S, H, DH],
        [amap(dims, ["b", "h", "i", "j"]), amap(dims, ["b", "j", "h", "d"]),
         amap(dims, ["b", "i", "h", "d"])],
        ["parallel"] * 4 + ["reduction"],
        "%p = arith.mulf %in0, %in1 : f32\n%s = arith.addf %out, %p : f32\n"
        "linalg.yield %s : f32", init=ctx_acc)
    merged = e.fresh("merged")
    e.emit(f"{merged} = tensor.collapse_shape {ctx} [[0, 1], [2, 3]] : "
           f"{tt([B, S, H, DH])} into {tt([N, D])}")
    return matmul(e, merged, wo, N, D, D, "attn")


def mlp(e, x, layer, w_fc, b_fc, w_proj, b_proj):
    e.comment(f"Block {layer}: GELU MLP, {D} -> {F} -> {D}.")
    wfc = layer_slice(e, w_fc, layer, [D, F], "wfc")
    bfc = layer_slice(e, b_fc, layer, [F], "bfc")
    wpr = layer_slice(e, w_proj, layer, [F, D], "wproj")
    bpr = layer_slice(e, b_proj, layer, [D], "bproj")
    h = add_bias(e, matmul(e, x, wfc, N, D, F, "fc"), bfc, N, F, "fcb")
    gelu = generic(
        e, "gelu", [(h, [N, F])], [N, F],
        [amap(["i", "j"], ["i", "j"])] * 2, ["parallel", "parallel"],
        f"%rs2 = arith.constant {1.0 / math.sqrt(2.0):.17e} : f32\n"
        "%half = arith.constant 0.5 : f32\n%one = arith.constant 1.0 : f32\n"
        "%a = arith.mulf %in0, %rs2 : f32\n%e = math.erf %a : f32\n"
        "%p = arith.addf %e, %one : f32\n%hx = arith.mulf %in0, %half : f32\n"
        "%g = arith.mulf %hx, %p : f32\nlinalg.yield %g : f32")
    return add_bias(e, matmul(e, gelu, wpr, N, F, D, "proj"), bpr, N, D,
                    "projb")


def param_shapes():
    return [
        ("wte", [V, D]), ("wpe", [S, D]),
        ("ln1_g", [L, D]), ("ln1_b", [L, D]),
        ("w_qkv", [L, D, 3 * D]), ("w_o", [L, D, D]),
        ("ln2_g", [L, D]), ("ln2_b", [L, D]),
        ("w_fc", [L, D, F]), ("b_fc", [L, F]),
        ("w_proj", [L, F, D]), ("b_proj", [L, D]),
        ("lnf_g", [D]), ("lnf_b", [D]), ("w_head", [D, V]),
    ]


PARAMS = param_shapes()
BATCH = [("tokens", [B, S], "i64"), ("labels", [B, S], "i64")]


def block(e, x, layer, p):
    """Transformer block `layer` on the residual stream x [N, D]."""
    g1 = layer_slice(e, p["ln1_g"], layer, [D], "ln1g")
    b1 = layer_slice(e, p["ln1_b"], layer, [D], "ln1b")
    a = attention(e, layer_norm(e, x, g1, b1, N, D, f"ln1_{layer}_"),
                  layer, p["w_qkv"], p["w_o"])
    x = add(e, x, a, [N, D], "res")
    g2 = layer_slice(e, p["ln2_g"], layer, [D], "ln2g")
    b2 = layer_slice(e, p["ln2_b"], layer, [D], "ln2b")
    m = mlp(e, layer_norm(e, x, g2, b2, N, D, f"ln2_{layer}_"), layer,
            p["w_fc"], p["b_fc"], p["w_proj"], p["b_proj"])
    x = add(e, x, m, [N, D], "res")
    return x


BLOCK_PARAMS = ["ln1_g", "ln1_b", "w_qkv", "w_o", "ln2_g", "ln2_b", "w_fc",
                "b_fc", "w_proj", "b_proj"]


def init_of(name):
    """The train.init of a parameter: layer-norm gains start at one,
    biases at zero, weight matrices and embeddings normal with a standard
    deviation of 0.02 (GPT-2's)."""
    if name.startswith("ln") and name.endswith("_g"):
        return '"ones"'
    if name.startswith("ln") and name.endswith("_b") or name.startswith("b_"):
        return '"zeros"'
    return "0.02 : f64"


def checkpointed_block(e, x, layer, p):
    """The block inside a train.checkpoint region: its inputs (the residual
    stream and the stacked block weights) are all the backward pass keeps."""
    res = e.fresh("ckpt")
    shapes = dict(PARAMS)
    inputs = [x] + [p[n] for n in BLOCK_PARAMS]
    types = [tt([N, D])] + [tt(shapes[n]) for n in BLOCK_PARAMS]
    e.emit(f"{res} = train.checkpoint ({', '.join(inputs)} : "
           f"{', '.join(types)}) -> {tt([N, D])} {{")
    inner = dict(p, **{n: f"%c{layer}_{n}" for n in BLOCK_PARAMS})
    x_in = f"%c{layer}_x"
    e.emit("^bb0(" + ", ".join(f"{v}: {t}" for v, t in
                               zip([x_in] + [inner[n] for n in BLOCK_PARAMS],
                                   types)) + "):")
    outer = e.indent
    e.indent += "  "
    saved = e.zero, e.lowest
    e.zero, e.lowest = f"%c{layer}_zero", f"%c{layer}_lowest"
    e.emit(f"{e.zero} = arith.constant 0.0 : f32")
    e.emit(f"{e.lowest} = arith.constant -3.40282347e+38 : f32")
    y = block(e, x_in, layer, inner)
    e.zero, e.lowest = saved
    e.emit(f"train.yield {y} : {tt([N, D])}")
    e.indent = outer
    e.emit("}")
    return res


def body(e):
    p = {name: f"%p_{name}" for name, _ in PARAMS}
    e.emit("%zero = arith.constant 0.0 : f32")
    e.emit("%lowest = arith.constant -3.40282347e+38 : f32")
    e.comment("Embeddings: h[b, s] = wte[tokens[b, s]] + wpe[s] (a gather).")
    d3 = ["b", "s", "d"]
    emb = generic(
        e, "emb", [("%b_tokens", [B, S], "i64"), (p["wpe"], [S, D])],
        [B, S, D],
        [amap(d3, ["b", "s"]), amap(d3, ["s", "d"]), amap(d3, d3)],
        ["parallel"] * 3,
        "%id = arith.index_cast %in0 : i64 to index\n"
        "%d = linalg.index 2 : index\n"
        f"%w = tensor.extract {p['wte']}[%id, %d] : {tt([V, D])}\n"
        "%h = arith.addf %w, %in1 : f32\nlinalg.yield %h : f32")
    x = e.fresh("x")
    e.emit(f"{x} = tensor.collapse_shape {emb} [[0, 1], [2]] : "
           f"{tt([B, S, D])} into {tt([N, D])}")
    for layer in range(L):
        if CHECKPOINT:
            x = checkpointed_block(e, x, layer, p)
            continue
        x = block(e, x, layer, p)
    xf = layer_norm(e, x, p["lnf_g"], p["lnf_b"], N, D, "lnf_")
    logits = matmul(e, xf, p["w_head"], N, D, V, "logits")
    e.comment("Next-token loss: positions 0..S-2 predict labels 1..S-1.")
    e.emit(f"""%logits3 = tensor.expand_shape {logits} [[0, 1], [2]] output_shape [{B}, {S}, {V}] : {tt([N, V])} into {tt([B, S, V])}
%logits_prev = tensor.extract_slice %logits3[0, 0, 0] [{B}, {S - 1}, {V}] [1, 1, 1] : {tt([B, S, V])} to {tt([B, S - 1, V])}
%logits_flat = tensor.collapse_shape %logits_prev [[0, 1], [2]] : {tt([B, S - 1, V])} into {tt([NP, V])}
%labels_next = tensor.extract_slice %b_labels[0, 1] [{B}, {S - 1}] [1, 1] : {tt([B, S], 'i64')} to {tt([B, S - 1], 'i64')}
%labels_flat = tensor.collapse_shape %labels_next [[0, 1]] : {tt([B, S - 1], 'i64')} into {tt([NP], 'i64')}
%loss, %count = train.cross_entropy mean %logits_flat, %labels_flat ignore_index = -100 : ({tt([NP, V])}, {tt([NP], 'i64')}) -> (tensor<f32>, tensor<i64>)
train.yield %loss, %count : tensor<f32>, tensor<i64>""")


def main():
    global CHECKPOINT, TRAIN
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint", action="store_true",
                        help="wrap every transformer block in a "
                             "train.checkpoint region (same values, "
                             "recomputed in the backward pass)")
    parser.add_argument("--batch", type=int, default=B,
                        help=f"number of sequences B (default {B}; "
                             "benchmarks use larger ones)")
    for flag, name, default in [("--seq", "tokens per sequence S", S),
                                ("--vocab", "vocabulary size V", V),
                                ("--dim", "model width D", D),
                                ("--heads", "attention heads H", H),
                                ("--ffn", "MLP width F", F),
                                ("--layers", "transformer blocks L", L)]:
        parser.add_argument(flag, type=int, default=default,
                            help=f"{name} (default {default})")
    parser.add_argument("--train", action="store_true",
                        help="write @tiny_gpt_train_step, the whole training "
                             "step for ga-train: the gradients clipped to a "
                             "global norm of 1, then AdamW on every "
                             "parameter (examples/tiny_gpt_train.mlir)")
    args = parser.parse_args()
    for flag in ["batch", "seq", "vocab", "dim", "heads", "ffn", "layers"]:
        if getattr(args, flag) < 1:
            parser.error(f"--{flag} must be positive, got "
                         f"{getattr(args, flag)}")
    CHECKPOINT = args.checkpoint
    TRAIN = args.train
    set_sizes(args.batch, args.seq, args.vocab, args.dim, args.heads,
              args.ffn, args.layers)
    e = Emitter()
    body(e)
    ptypes = [tt(shape) for _, shape in PARAMS]
    btypes = [tt(shape, ety) for _, shape, ety in BATCH]
    fargs = [f"%{n}: {t}" for (n, _), t in zip(PARAMS, ptypes)]
    fargs += [f"%{n}: {t}" for (n, _, _), t in zip(BATCH, btypes)]
    bargs = [f"%p_{n}: {t}" for (n, _), t in zip(PARAMS, ptypes)]
    bargs += [f"%b_{n}: {t}" for (n, _, _), t in zip(BATCH, btypes)]
    results = ["tensor<f32>"] + ptypes + ["tensor<i64>"]
    grads = ", ".join(f"%g_{n}" for n, _ in PARAMS)
    if TRAIN:
        fargs = ([f"%{n}: {t} {{train.init = {init_of(n)}}}"
                  for (n, _), t in zip(PARAMS, ptypes)]
                 + fargs[len(PARAMS):]
                 + [f"%m_{n}: {t}" for (n, _), t in zip(PARAMS, ptypes)]
                 + [f"%v_{n}: {t}" for (n, _), t in zip(PARAMS, ptypes)]
                 + ["%lr: tensor<f32>", "%t: tensor<i64>"])
        results = ptypes * 3 + ["tensor<f32>", "tensor<f32>", "tensor<i64>"]
    out = []
    out.append("// GENERATED by examples/gen_tiny_gpt.py: edit that, not this.")
    out.append("//")
    for line in __doc__.strip().split("\n")[2:]:
        out.append(("// " + line).rstrip())
    out.append("//")
    out.append(f"// Sizes: B = {B} sequences of S = {S} tokens, vocabulary V = "
               f"{V}, width D = {D},")
    out.append(f"// H = {H} heads of {DH}, MLP width F = {F}, L = {L} blocks.")
    out.append("// Parameters: " + ", ".join(n for n, _ in PARAMS) + ".")
    out.append("// Batch: tokens [B, S] (i64), labels [B, S] (i64, -100 at "
               "padding).")
    if TRAIN:
        out.append("// Written by: python3 examples/gen_tiny_gpt.py "
                   + " ".join(sys.argv[1:]))
        out.append("// Then, per parameter, its AdamW moments m and v; the "
                   "learning rate and the")
        out.append("// step number (1 first). The gradients are clipped to a "
                   "global norm of 1,")
        out.append("// then every parameter takes one AdamW step "
                   "(torch.optim.AdamW's defaults).")
        out.append("// train.init: how ga-train initializes the parameter "
                   "(the standard deviation")
        out.append("// of a normal draw, \"zeros\" or \"ones\").")
        out.append("// Results: the new parameters, the new moments, the "
                   "loss, the gradient norm")
        out.append("// before clipping, the valid count.")
    else:
        out.append("// Results: loss, one gradient per parameter, valid "
                   "count.")
    out.append("")
    entry = "tiny_gpt_train_step" if TRAIN else "tiny_gpt_step"
    out.append(f"func.func @{entry}(" + ", ".join(fargs) + ")")
    out.append("    -> (" + ", ".join(results) + ") {")
    out.append(f"  %loss, {grads}, %count = train.step")
    out.append("      params(" + ", ".join(f"%{n}" for n, _ in PARAMS) + " : "
               + ", ".join(ptypes) + ")")
    out.append("      batch(" + ", ".join(f"%{n}" for n, _, _ in BATCH) + " : "
               + ", ".join(btypes) + ")")
    out.append("      -> tensor<f32> grads(" + ", ".join(ptypes) + ")")
    out.append("      aux(tensor<i64>) {")
    out.append("  ^bb0(" + ", ".join(bargs) + "):")
    out.extend(e.lines)
    out.append("  }")
    if not TRAIN:
        out.append(f"  return %loss, {grads}, %count : "
                   + ", ".join(results))
        out.append("}")
        print("\n".join(out))
        return
    clipped = ", ".join(f"%c_{n}" for n, _ in PARAMS)
    out.append(f"  {clipped}, %norm = train.clip_by_global_norm {grads} "
               f"max_norm = 1.0 : {', '.join(ptypes)} -> tensor<f32>")
    for (n, _), t in zip(PARAMS, ptypes):
        out.append(f"  %new_{n}, %new_m_{n}, %new_v_{n} = train.adamw %{n}, "
                   f"%c_{n}, %m_{n}, %v_{n}, %lr, %t : {t}, {t}, tensor<f32>, "
                   "tensor<i64>")
    new = ([f"%new_{n}" for n, _ in PARAMS] + [f"%new_m_{n}" for n, _ in PARAMS]
           + [f"%new_v_{n}" for n, _ in PARAMS])
    out.append("  return " + ", ".join(new) + ", %loss, %norm, %count : "
               + ", ".join(results))
    out.append("}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
