"""The step module's text around the exported forward function: the
train.step (the loss, the schedule, every argument named), the whole
training step's clipping and AdamW, inlined, legalized and verified by
ga-opt."""

import os
import subprocess
import tempfile

from .errors import ImportError_
from .export import _tensor_type
from .locations import _user_locations

def _inner_func(module_text):
    """(attribute and type aliases, the func.func op) of a generic-form
    module, as text."""
    start = module_text.index('"func.func"()')
    end = module_text.rindex("}) : () -> ()")
    head = module_text[:module_text.index('"builtin.module"')]
    aliases = "\n".join(l for l in head.splitlines() if l.startswith(("#", "!")))
    return aliases, module_text[start:end].rstrip()




_ADAMW_DEFAULTS = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
                   "weight_decay": 0.01}


def _adamw_attributes(adamw):
    """train.adamw's attributes from a dict of hyperparameters, checked."""
    adamw = dict(adamw or {})
    unknown = sorted(set(adamw) - set(_ADAMW_DEFAULTS))
    if unknown:
        raise ImportError_(f"adamw takes {', '.join(_ADAMW_DEFAULTS)}, got "
                           f"{', '.join(unknown)}")
    values = {**_ADAMW_DEFAULTS, **adamw}
    for k, v in values.items():
        if not isinstance(v, (int, float)):
            raise ImportError_(f"adamw {k} must be a number, got {v!r}")
    if not (0 <= values["beta1"] < 1 and 0 <= values["beta2"] < 1):
        raise ImportError_(f"adamw betas must lie in [0, 1), got "
                           f"({values['beta1']!r}, {values['beta2']!r})")
    if not values["eps"] > 0 or values["weight_decay"] < 0:
        raise ImportError_(f"adamw needs eps > 0 and weight_decay >= 0, got "
                           f"eps {values['eps']!r}, weight_decay "
                           f"{values['weight_decay']!r}")
    return {k: float(v) for k, v in values.items()}


def _mlir_float(value):
    """A float as MLIR's parser reads it (a '.' before any exponent)."""
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent




def _wrap(ga_opt, aliases, forward, logits, element, ignore_index, reduction,
          name, names, params, inputs, labels, microbatches, data_parallel,
          train=False, clip=1.0, shift_labels=False, loss_fn=False,
          batch_names=None, adamw=None):
    """The step module around the exported forward function, inlined,
    legalized (ga-legalize-import) and verified by ga-opt."""
    n = labels.numel() - (labels.shape[0] if shift_labels else 0)
    loss = f"tensor<{element}>"
    ptypes = [_tensor_type(p) for p in params]
    itypes = [_tensor_type(x) for x in inputs]
    ltype = _tensor_type(labels)
    pn = [f"%p{i}" for i in range(len(params))]
    inn = [f"%x{i}" for i in range(len(inputs))]
    bp = [f"%bp{i}" for i in range(len(params))]
    bi = [f"%bx{i}" for i in range(len(inputs))]
    sched = f"microbatches = {microbatches} : i64" + (
        f", data_parallel = {data_parallel} : i64" if data_parallel > 1
        else "")
    flat = f"tensor<{n}xi64>"
    collapse = ("" if labels.dim() == 1 else
                f"    %flat = tensor.collapse_shape %blabels "
                f"[[{', '.join(str(d) for d in range(labels.dim()))}]] : "
                f"{ltype} into {flat}\n")
    flat_name = "%blabels" if labels.dim() == 1 else "%flat"
    if shift_labels:  # labels 1..S-1 of every row
        b, s = labels.shape
        shifted = f"tensor<{b}x{s - 1}xi64>"
        collapse = (f"    %shifted = tensor.extract_slice %blabels[0, 1] "
                    f"[{b}, {s - 1}] [1, 1] : {ltype} to {shifted}\n"
                    f"    %flat = tensor.collapse_shape %shifted [[0, 1]] : "
                    f"{shifted} into {flat}\n")
        flat_name = "%flat"
    grads = ", ".join(f"%g{i}" for i in range(len(params)))
    head = [aliases, "module {", forward]
    # Every argument carries its name (train.name): a parameter its
    # state_dict key, a batch entry its key in the batch, the optimizer's
    # state torch.optim.AdamW's names.
    def named(value, type_, key):
        key = key.replace("\\", "\\\\").replace('"', '\\"')
        return f'{value}: {type_} {{train.name = "{key}"}}'

    batch_names = batch_names or [f"input{i}" for i in range(len(inputs))] \
        + ["labels"]
    pargs = [named(p, t, n) for p, t, n in zip(pn, ptypes, names)]
    args = (pargs + [named(x, t, k) for x, t, k in zip(inn, itypes,
                                                        batch_names)]
            + [named("%labels", ltype, batch_names[-1])])
    step = (f"train.step params({', '.join(pn)} : {', '.join(ptypes)}) "
            f"batch({', '.join(inn + ['%labels'])} : "
            f"{', '.join(itypes + [ltype])}) attributes {{{sched}}} "
            f"-> {loss} grads({', '.join(ptypes)})"
            + (" aux(tensor<i64>)" if train and not loss_fn else "") + " {")
    block = (f"  ^bb0({', '.join([f'{b}: {t}' for b, t in zip(bp, ptypes)] + [f'{b}: {t}' for b, t in zip(bi, itypes)] + [f'%blabels: {ltype}'])}):")
    if loss_fn:
        # The loss written in PyTorch: the forward function returns it, and
        # it reads the labels as one more argument.
        body = [f"    %l = func.call @ga_forward({', '.join(bp + bi)}, "
                f"%blabels) : ({', '.join(ptypes + itypes + [ltype])}) -> "
                f"{loss}",
                f"    train.yield %l : {loss}"]
    else:
        # train.cross_entropy, which also counts the valid labels for
        # ga-train.
        counted = ", %n" if train else ""
        body = [f"    %logits = func.call @ga_forward({', '.join(bp + bi)}) : "
                f"({', '.join(ptypes + itypes)}) -> {logits}",
                collapse.rstrip("\n"),
                f"    %l{counted} = train.cross_entropy {reduction} %logits, "
                f"{flat_name} ignore_index = {ignore_index} : ({logits}, "
                f"{flat}) -> "
                + (f"({loss}, tensor<i64>)" if train else loss),
                f"    train.yield %l{counted} : {loss}"
                + (", tensor<i64>" if train else "")]
    if not train:
        lines = head + [
            f"func.func @{name}({', '.join(args)}) -> "
            f"({loss}, {', '.join(ptypes)}) {{",
            f"  %loss, {grads} = {step}", block, *body, "  }",
            f"  return %loss, {grads} : {loss}, {', '.join(ptypes)}",
            "}",
            "}",
        ]
    else:
        # The whole training step of ga-train (examples/mlp_train.mlir):
        # the gradients clipped to a global norm of `clip`, then AdamW
        # (torch.optim.AdamW's defaults, or `adamw`) on every parameter. A
        # loss written in PyTorch counts nothing. clip=None: the largest
        # float's norm, which scales by exactly 1.
        ms = [f"%m{i}" for i in range(len(params))]
        vs = [f"%v{i}" for i in range(len(params))]
        clipped = ", ".join(f"%c{i}" for i in range(len(params)))
        results = ptypes * 3 + [loss, loss] + ([] if loss_fn else
                                               ["tensor<i64>"])
        max_norm = 3.4028234663852886e38 if clip is None else float(clip)
        hyper = adamw or _ADAMW_DEFAULTS
        attrs = ", ".join(f"{k} = {_mlir_float(hyper[k])} : f64"
                          for k in ("beta1", "beta2", "eps", "weight_decay"))
        lines = head + [
            f"func.func @{name}("
            + ", ".join(args
                        + [named(m, t, f"exp_avg.{n}")
                           for m, t, n in zip(ms, ptypes, names)]
                        + [named(v, t, f"exp_avg_sq.{n}")
                           for v, t, n in zip(vs, ptypes, names)]
                        + [named("%lr", "tensor<f32>", "lr"),
                           named("%t", "tensor<i64>", "step")])
            + f") -> ({', '.join(results)}) {{",
            f"  %loss, {grads}{'' if loss_fn else ', %count'} = {step}",
            block, *body, "  }",
            f"  {clipped}, %norm = train.clip_by_global_norm {grads} "
            f"max_norm = {_mlir_float(max_norm)} : {', '.join(ptypes)} -> "
            f"{loss}",
            *[f"  %np{i}, %nm{i}, %nv{i} = train.adamw {p}, %c{i}, {m}, {v}, "
              f"%lr, %t {{{attrs}}} : {t}, {t}, tensor<f32>, tensor<i64>"
              for i, (p, m, v, t) in enumerate(zip(pn, ms, vs, ptypes))],
            "  return "
            + ", ".join([f"%np{i}" for i in range(len(params))]
                        + [f"%nm{i}" for i in range(len(params))]
                        + [f"%nv{i}" for i in range(len(params))]
                        + ["%loss", "%norm"]
                        + ([] if loss_fn else ["%count"]))
            + f" : {', '.join(results)}",
            "}",
            "}",
        ]
    wrapped = "\n".join(l for l in lines if l) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "wrapped.mlir")
        with open(src, "w") as f:
            f.write(wrapped)
        try:
            done = subprocess.run(
                [ga_opt, src, "--inline", "--symbol-dce",
                 "--ga-legalize-import", "--canonicalize",
                 "--mlir-print-debuginfo"],
                capture_output=True, text=True)
        except OSError as e:
            raise ImportError_(f"cannot run ga-opt '{ga_opt}': {e.strerror} "
                               "(pass ga_opt=PATH, or --ga-opt)") from e
    if done.returncode:
        first = done.stderr.strip().splitlines()[0] if done.stderr else ""
        raise ImportError_(f"ga-opt cannot read torch-mlir's export: {first}"
                           f"\n{done.stderr[-4000:]}")
    # The wrapper's own ops (and those without a user's line) are located
    # at the lines of the step's text, where it is read.
    return _user_locations(done.stdout, ignore=src)
