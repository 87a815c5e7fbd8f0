"""ga-import: PyTorch models into ga-opt training steps, through torch-mlir.

    import ga_import
    text = ga_import.import_step(model, batch, ga_opt="build/bin/ga-opt")

`model` is a torch.nn.Module whose forward takes the batch's inputs (the
entries of `batch` other than the labels, by keyword) and returns logits
[..., V]; `batch` is a dict of tensors with the labels under `labels_key`
(-100 where ignored). The loss is `F.cross_entropy(logits.view(-1, V),
labels.view(-1), ignore_index=...)` with `reduction` mean or sum: it becomes
`train.cross_entropy`, which ga-opt's split rewrites exactly. With
`shift_labels` (causal language models, as transformers' own loss) the
logits of positions 0..S-2 are scored against the labels of 1..S-1.

Or the loss is written in PyTorch: `loss_fn(outputs, batch)` returns a
scalar tensor from the model's outputs and the whole batch; it is exported
with the model, lowered to linalg like the rest, and the decomposability
analysis proves a split of it exact, rewrites it (a mean over the valid
labels becomes a sum over the global count) or refuses it at the op.

The model is exported in eval mode (dropout off: a step that ga-opt splits
bit for bit draws no random numbers); its training flag is restored.

The result is a module with one public function, `@step` by default:

    func.func @step(<parameters>, <inputs>, %labels) -> (loss, <gradients>)

whose body is one `train.step` (`microbatches` and `data_parallel` as
given). The parameters are the model's `named_parameters()` (tied weights
once), in that order; `ImportedStep.param_names` gives their state_dict
keys, and each parameter argument carries its key as `train.name` (which
ga-train writes into its checkpoints' manifests). The forward pass is exported by torch-mlir's FX
importer to linalg on tensors with the parameters as arguments, printed in
generic form (torch-mlir follows LLVM's development head; ga-opt is on
MLIR 22), wrapped, inlined into the step and verified by `ga-opt`; an
export that MLIR 22 cannot read is a clear error naming the operation.

With `train=True` the function is instead a whole training step for
ga-train (examples/mlp_train.mlir's form): the train.step also returns the
count of valid labels, its gradients are clipped to a global norm of
`clip` (train.clip_by_global_norm) and every parameter takes one AdamW step
(train.adamw), with the first and second moments of every parameter, the
learning rate and the step number as further arguments:

    func.func @step(<parameters>, <inputs>, %labels, <m>, <v>, %lr, %t)
        -> (<new parameters>, <new m>, <new v>, loss, norm, count)

Also a command: `python -m ga_import FILE.py:FUNCTION -o step.mlir`, where
FUNCTION() returns (model, batch).
"""

import os
import re
import subprocess
import sys
import tempfile

from .check import check_step, ga_run_beside
from .conventions import ConventionError, PyTorchConventions
from .keyed_sums import keyed_sums_mode
from .modes import reparametrized, training_semantics

__all__ = ["ImportError_", "ImportedStep", "import_step", "export_forward"]


class StopImport(Exception):
    """Raised by an `on_export` hook to stop import_step after the export
    (compile_step, whose cache holds the step of that program); it passes
    through import_step as it is."""


class ImportError_(RuntimeError):
    """A model or batch that ga-import cannot turn into a step; the message
    says what and why."""


def _torch():
    try:
        import torch
        import torch_mlir.fx  # noqa: F401
    except ModuleNotFoundError as e:
        raise ImportError_(
            f"ga-import needs torch and torch-mlir ({e.name} is missing): "
            "run scripts/setup_frontend.sh and use the python it prints")
    return torch


_DTYPES = {"torch.float32": "f32", "torch.float64": "f64",
           "torch.int64": "i64", "torch.int32": "i32", "torch.bool": "i1"}


def _tensor_type(t):
    dtype = _DTYPES.get(str(t.dtype))
    if dtype is None:
        raise ImportError_(f"a tensor of {t.dtype}: ga-import takes "
                           f"{', '.join(_DTYPES)}")
    dims = "x".join(str(d) for d in t.shape)
    return f"tensor<{dims}x{dtype}>" if dims else f"tensor<{dtype}>"


def export_forward(model, inputs, func_name="ga_forward", shift=False,
                   loss_fn=None, batch=None, dropout="refuse", rewritten=None,
                   on_export=None):
    """(generic MLIR text of the forward function, parameter names,
    parameter tensors, the result's tensor type): torch-mlir's export of
    `model(**inputs)` with the parameters as leading arguments; with
    `loss_fn`, of `loss_fn(model(**inputs), batch)` with the parameters and
    then every entry of `batch` as arguments. `on_export(program)` is
    called with torch.export's program before torch-mlir imports it (the
    compile cache's key is read from it; it may raise to stop there)."""
    torch = _torch()
    from torch_mlir import fx

    named = list(model.named_parameters())
    if not named:
        raise ImportError_("the model has no parameters: nothing to train")
    names = [n for n, _ in named]
    params = [p.detach() for _, p in named]
    keys = list(batch if loss_fn else inputs)

    # Whether the trace stopped a gradient (then the lowering carries the
    # custom op through; else it is torch-mlir's own).
    stopped = []

    # What the conventions rewrote ({what: count}), into the caller's dict.
    rewritten = {} if rewritten is None else rewritten
    traced_loss = _as_module(torch, loss_fn) if loss_fn else None

    class Forward(torch.nn.Module):
        def forward(self, *args):
            with _gradient_modes_traced(torch) as modes, \
                    keyed_sums_mode(torch), \
                    PyTorchConventions(torch, modes.stop,
                                       dropout) as conventions:
                result = self.traced(*args)
            if modes.used:
                stopped.append(True)
            rewritten.update(conventions.rewritten)
            return result

        def traced(self, *args):
            ps = dict(zip(names, args[:len(names)]))
            kw = dict(zip(keys, args[len(names):]))
            # The model's parameters are the step's arguments for the model
            # and for the loss alike: a loss that reads one by closure
            # (model.temperature, an L2 penalty over model.parameters())
            # differentiates it like the model does.
            with reparametrized(torch, model, ps):
                out = model(**{k: v for k, v in kw.items() if k in inputs})
                if loss_fn:
                    return traced_loss(out, kw)
            if hasattr(out, "logits"):
                out = out.logits
            if isinstance(out, (tuple, list)):
                out = out[0]
            if shift:  # positions 0..S-2 predict labels 1..S-1
                out = out[:, :-1]
            return out.reshape(-1, out.shape[-1])

    args = [*params, *((batch if loss_fn else inputs)[k] for k in keys)]
    try:
        with training_semantics(torch, model, dropout):
            program = torch.export.export(Forward(), tuple(args),
                                          strict=False)
        if on_export is not None:
            on_export(program)
        with training_semantics(torch, model, dropout):
            module = fx.export_and_import(program, output_type="raw",
                                          func_name=func_name)
        module = _lower_to_linalg(module, carried=bool(stopped))
    except (ImportError_, StopImport):
        raise
    except Exception as e:  # torch's and torch-mlir's errors, as they are
        refusal = _convention_error(e) or _data_dependent_error(e)
        if refusal:
            raise ImportError_(str(refusal)) from e
        raise ImportError_(f"torch-mlir could not export the model: "
                           f"{type(e).__name__}: {e}") from e
    text = _stop_gradients(_inline_resources(_user_locations(
        module.operation.get_asm(print_generic_op_form=True,
                                 assume_verified=True,
                                 enable_debug_info=True))))
    if "ml_program." in text:
        raise ImportError_(
            "the export keeps state between calls (ml_program globals, such "
            "as the seed of a random draw even in eval mode), which a "
            "training step of ga-opt cannot hold")
    if "tm_tensor." in text:
        raise ImportError_(_tm_tensor_error(module))
    if loss_fn:
        # The loss: one float, a 0-d tensor.
        result = re.search(r"function_type = \(.*?\) -> (tensor<\w+>)[,}\s]",
                           text)
        if not result or result.group(1) not in ("tensor<f32>",
                                                 "tensor<f64>"):
            got = re.search(r"function_type = \(.*?\) -> ([^,}]*)", text)
            raise ImportError_(
                "loss_fn must return a scalar float tensor (the loss), got "
                f"{got.group(1).strip() if got else 'something else'}")
        return text, names, params, result.group(1)
    # The logits' type, as the export's signature gives it.
    result = re.search(r"function_type = \(.*?\) -> (tensor<\d+x\d+x\w+>)",
                       text)
    if not result:
        raise ImportError_("the model's exported forward does not return "
                           "one tensor of logits [N, V]")
    return text, names, params, result.group(1)


def _as_module(torch, fn):
    """`fn` called as a module's forward, so that the export records the
    lines of the loss that make each op (torch.export keeps the frames of
    modules' `forward`s only): a plain function becomes the forward of a
    module, under that name; any other callable is called as it is."""
    import types
    if not isinstance(fn, types.FunctionType):
        return fn
    forward = types.FunctionType(fn.__code__.replace(co_name="forward"),
                                 fn.__globals__, "forward", fn.__defaults__,
                                 fn.__closure__)
    forward.__kwdefaults__ = fn.__kwdefaults__
    return type("Loss", (torch.nn.Module,),
                {"forward": staticmethod(forward)})()


def _convention_error(e):
    """The ConventionError behind an exception raised while tracing (torch
    may wrap it), or None."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, ConventionError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


# Gradients stopped in the model or the loss: torch.export drops `.detach()`
# and `torch.no_grad()` (an exported function computes values, not
# gradients), so that the step would differentiate through them and its
# gradient would silently differ from PyTorch's. While the model is traced,
# `Tensor.detach` is the custom op `ga::stop_gradient`, and so is every value
# computed while gradients are off; the export keeps the op (as
# `torch.operator`), it travels through torch-mlir's lowering as a call of a
# declared function, and becomes `train.stop_gradient`.
_STOP_GRADIENT = []
_CARRIER = "ga_stop_gradient_"


def _stop_gradient_op(torch):
    if not _STOP_GRADIENT:
        @torch.library.custom_op("ga::stop_gradient", mutates_args=())
        def stop_gradient(x: torch.Tensor) -> torch.Tensor:
            return x.clone()

        @stop_gradient.register_fake
        def _(x):
            return torch.empty_like(x)

        _STOP_GRADIENT.append(stop_gradient)
    return _STOP_GRADIENT[0]


class _gradient_modes_traced:
    """While the model and the loss are traced: `Tensor.detach` is
    `ga::stop_gradient`, and so is every floating-point tensor that a torch
    function returns while gradients are off (in a `torch.no_grad()` block,
    or a function decorated with it such as a rotary embedding's), as
    PyTorch's autograd records no history for them."""

    def __init__(self, torch):
        self.torch = torch

    def __enter__(self):
        torch = self.torch
        op = _stop_gradient_op(torch)
        from torch.utils._pytree import tree_map
        # Whether a gradient was stopped.
        self.used = False

        def stop(value):
            self.used = True
            return op(value)

        def stopped(value):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                return stop(value)
            return value

        class GradientsOff(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                result = func(*args, **(kwargs or {}))
                if torch.is_grad_enabled() or func is op:
                    return result
                return tree_map(stopped, result)

        self.stop = stop
        self.detach = torch.Tensor.detach
        torch.Tensor.detach = stop
        self.mode = GradientsOff()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        self.torch.Tensor.detach = self.detach
        return False


def _lower_to_linalg(module, carried):
    """torch-mlir's lowering of a raw export to linalg on tensors, with each
    `ga::stop_gradient` (present only when `carried`) carried through as a
    call of a declared function. torch-mlir's check of its linalg backend
    contract refuses calls: when the export has such calls, it is replaced
    by a check that no torch op is left."""
    from torch_mlir import ir
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report
    from torch_mlir.passmanager import PassManager

    # The export is printed and parsed again only to carry the op.
    text = (module.operation.get_asm(print_generic_op_form=True,
                                     enable_debug_info=True)
            if carried else "")
    declared = {}

    def call(match):
        result, operand, type_in, type_out = match.groups()
        name = declared.setdefault((type_in, type_out),
                                   f"{_CARRIER}{len(declared)}")
        return (f'{result} = "func.call"({operand}) <{{callee = @{name}}}> : '
                f'({type_in}) -> {type_out}')

    text = re.sub(r'(%[\w#:]+) = "torch\.operator"\((%[\w#:]+)\) '
                  r'<\{name = "torch\.ga\.stop_gradient"\}> : '
                  r'\(([^)]*)\) -> (\S+)', call, text)
    if declared:
        decls = "".join(
            f'"func.func"() <{{function_type = ({type_in}) -> {type_out}, '
            f'sym_name = "{name}", sym_visibility = "private"}}> ({{}}) : '
            "() -> ()\n" for (type_in, type_out), name in declared.items())
        head = '"builtin.module"() ({'
        if head not in text:
            raise ImportError_("the raw export is not a module in generic form")
        text = text.replace(head, head + "\n" + decls, 1)
    errors = []

    def collect(diagnostic):
        # torch-mlir's errors, kept for the refusal (and not printed).
        if diagnostic.severity == ir.DiagnosticSeverity.ERROR:
            errors.append((str(diagnostic.location), diagnostic.message))
        return True

    with module.context:
        handler = module.context.attach_diagnostic_handler(collect)
        try:
            if declared:
                module = ir.Module.parse(text)
            run_pipeline_with_repro_report(
                module,
                "builtin.module(func.func(torch-match-quantized-custom-ops), "
                "torchdynamo-export-to-torch-backend-pipeline"
                "{ extra-library=})",
                "Lowering TorchFX IR -> Torch Backend IR")
            pipeline = str(PassManager.parse(
                "builtin.module(torch-backend-to-linalg-on-tensors-backend-"
                "pipeline)"))
            verify = ",torch-verify-linalg-on-tensors-backend-contract)"
            if declared and pipeline.endswith(verify):
                pipeline = pipeline[:-len(verify)] + ")"
            run_pipeline_with_repro_report(
                module, pipeline,
                "Lowering Torch Backend IR -> Linalg-on-Tensors Backend IR")
        except Exception as e:
            if errors:
                raise ImportError_(_lowering_error(*errors[0])) from e
            raise
        finally:
            handler.detach()
    if declared:
        lowered = module.operation.get_asm(print_generic_op_form=True)
        left = re.search(r'"(torch(?:_c)?\.[\w.]+)"', lowered)
        if left:
            raise ImportError_(f"torch-mlir left {left.group(1)} in the "
                               "export, which it cannot lower to linalg")
    return module


# Installed packages whose frames are never the model's own code.
_FRAMEWORK = ("torch", "torch_mlir", "functorch", "torchgen")


def _user_frames(frames):
    """The (file, line) frames of an export's location that are the user's:
    outside installed packages and ga-import, or else (a model shipped by a
    library, such as transformers') outside PyTorch, torch-mlir and
    ga-import."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = [f for f in frames if not f[0].startswith(here)]
    own = [f for f in ours if "site-packages" not in f[0] and
           "dist-packages" not in f[0]]
    if own:
        return own
    framework = tuple(f"-packages{os.sep}{p}{os.sep}" for p in _FRAMEWORK)
    return [f for f in ours if not any(p in f[0] for p in framework)]


def _data_dependent_error(e):
    """A refusal for torch.export's data-dependent guard (a shape or a
    branch that depends on the batch's values), at the model's line; None
    for other errors."""
    text = str(e)
    if "data-dependent" not in text and \
            type(e).__name__ != "GuardOnDataDependentSymNode":
        return None
    import traceback
    frames = [(f.filename, str(f.lineno), f.line)
              for f in traceback.extract_tb(e.__traceback__)
              if os.path.isfile(f.filename)]
    user = _user_frames([f[:2] for f in frames])
    where = ""
    if user:
        line = next(f[2] for f in frames if f[:2] == user[-1])
        where = f" at {user[-1][0]}:{user[-1][1]} (`{line}`)"
    return (f"the model has a shape or a branch that depends on the batch's "
            f"values{where}, which torch.export cannot trace "
            f"({text.splitlines()[0][:200]}): write it with fixed shapes (a "
            "mask instead of a selection; transformers' mixture-of-experts "
            "models: experts_implementation=\"batched_mm\")")


def user_location(location):
    """' at FILE:LINE' of the first frame of an MLIR location (torch-mlir's
    call-site locations of the export, innermost first) that is the user's;
    '' when there is none."""
    user = _user_frames(re.findall(r'"([^"]+)":(\d+)', location))
    return f" at {user[0][0]}:{user[0][1]}" if user else ""


def _lowering_error(location, message):
    """torch-mlir's first error as a refusal: the op, the PyTorch call it
    stands for, the user's line."""
    op = re.search(r"'(torch\.[\w.]+)'", message)
    name = re.search(r'name = "torch\.(aten\.\w+)', message) or \
        re.search(r"torch\.(aten\.\w+)", message)
    call = f" (PyTorch's {name.group(1).replace('aten.', 'torch.')})" \
        if name else ""
    what = op.group(1) if op else "an operation"
    first = message.splitlines()[0]
    hint = next((h for calls, h in _LOWERING_HINTS if name and
                 name.group(1) in calls), "")
    return (f"torch-mlir cannot lower {what}{call} to linalg"
            f"{user_location(location)}: {first[:300]}; write it with other "
            f"PyTorch operations, or keep it out of the step{hint}")


# What to do about the PyTorch calls that torch-mlir cannot lower, where a
# model library offers another form.
_LOWERING_HINTS = [
    (("aten.histc", "aten._grouped_mm", "aten.bincount"),
     " (transformers' mixture-of-experts models: "
     "experts_implementation=\"batched_mm\", whose top-k routing ga-import "
     "writes as passes of max)"),
]


def _location_frames(text):
    """For the MLIR `text` printed with its locations: a function from the
    body of one `loc(...)` to its (file, line) frames, innermost first, the
    `#loc` aliases it refers to expanded in place."""
    aliases = dict(re.findall(r"^(#loc\d*) = loc\((.*)\)$", text,
                              re.MULTILINE))
    resolved = {}

    def frames(alias):
        if alias not in resolved:
            resolved[alias] = []  # a cycle ends here
            resolved[alias] = expand(aliases.get(alias, ""))
        return resolved[alias]

    def expand(body):
        found = []
        for match in re.finditer(r'"([^"]+)":(\d+)|(#loc\d*)', body):
            if match.group(3):
                found += frames(match.group(3))
            else:
                found.append((match.group(1), match.group(2)))
        return found
    return expand


def _loc_end(text, start):
    """The index of the `)` that closes the ` loc(` at `start` (balanced,
    outside string literals)."""
    depth, i, quoted = 0, start + 4, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                break
        i += 1
    return i


def _user_locations(text, ignore=None):
    """The export's locations (torch-mlir's call sites of each op, as
    aliases after the module) replaced in place by the user's line that
    made the op (`loc("model.py":12:0)`; see _user_frames), or dropped
    where no frame is the user's: ga-opt's diagnostics on the step (a split
    refused, an op without a derivative) then name the model's or the
    loss's line. Frames in the file `ignore` (ga-import's own temporary
    module) are not the user's."""
    expand = _location_frames(text)
    text = re.sub(r"^#loc\d* = loc\(.*\)$\n?", "", text, flags=re.MULTILINE)
    out, at = [], 0
    while True:
        start = text.find(" loc(", at)
        if start < 0:
            break
        end = _loc_end(text, start)
        user = _user_frames([f for f in expand(text[start + 5:end])
                             if f[0] != ignore])
        out.append(text[at:start])
        if user:
            file = user[0][0].replace("\\", "\\\\").replace('"', '\\"')
            out.append(f' loc("{file}":{user[0][1]}:0)')
        at = end + 1
    out.append(text[at:])
    return "".join(out)


def _stop_gradients(text):
    """The carrier calls of `ga::stop_gradient` as `train.stop_gradient`,
    and their declarations dropped."""
    text = re.sub(r'"func\.call"\((%[\w#:]+)\) <\{callee = @' + _CARRIER +
                  r'\d+\}>', r'"train.stop_gradient"(\1)', text)
    return re.sub(r'\s*"func\.func"\(\) <\{function_type = [^\n]*sym_name = "' +
                  _CARRIER + r'\d+"[^\n]*\n(\s*\}\) : \(\) -> \(\)'
                  r'( loc\([^\n]*\))?)?', "", text)


# torch-mlir's TMTensor ops (MLIR 22 has no such dialect): the PyTorch calls
# that make them, and what to do instead.
_TM_TENSOR = {
    "scan": ("torch.cumprod or another running reduction (ga-import "
             "writes torch.cumsum as a masked sum)", "write it as a masked "
             "reduction over the positions up to each one"),
    "sort": ("torch.sort, argsort or topk", "keep sorting out of the step"),
    "scatter": ("torch.scatter or index_put; ga-import writes scatter_add, "
                "index_add and scatter_reduce's sum as one-hot products",
                "write it as a one-hot product or a gather"),
    "attention": ("scaled_dot_product_attention's fused kernel",
                  "use its math path (transformers: "
                  "attn_implementation=\"eager\")"),
}


def _tm_tensor_error(module):
    """Which tm_tensor op the export holds, the PyTorch call behind it (its
    source line from the export's locations) and what to do."""
    text = module.operation.get_asm(print_generic_op_form=True,
                                    assume_verified=True,
                                    enable_debug_info=True)
    match = re.search(r'"tm_tensor\.(\w+)"', text)
    name = match.group(1)
    # The op's location: the first one after it, its frames resolved
    # through the aliases, the user's innermost (else the innermost).
    where = ""
    start = text.find(" loc(", match.end())
    if start >= 0:
        frames = _location_frames(text)(text[start + 5:_loc_end(text,
                                                               start)])
        user = _user_frames(frames)
        if user or frames:
            file, line = (user or frames)[0]
            where = f" at {file}:{line}"
    call, fix = _TM_TENSOR.get(name, ("a PyTorch call that torch-mlir "
                                      "lowers to TMTensor", "write it with "
                                      "elementwise operations, reductions "
                                      "and products"))
    return (f"the export contains tm_tensor.{name} (from {call}){where}, "
            f"which MLIR 22 does not have: {fix}")


def _inline_resources(text):
    """The export with its `dense_resource` constants (buffers such as
    position ids and rotary frequencies, kept in the module's resource
    section) written as `dense` hex literals in place: the step module
    holds no resource section."""
    blobs = dict(re.findall(r'^\s*([\w.]+): "0x([0-9A-Fa-f]*)"', text,
                            re.MULTILINE))

    def literal(match):
        name = match.group(1)
        if name not in blobs:
            raise ImportError_(f"the export refers to the resource '{name}', "
                               "which it does not hold")
        # A blob starts with its alignment (4 bytes), then the raw data.
        return f'dense<"0x{blobs[name][8:]}">'

    text = re.sub(r"dense_resource<([\w.]+)>", literal, text)
    start = text.find("{-#")
    return text[:start] if start >= 0 else text


def _inner_func(module_text):
    """(attribute and type aliases, the func.func op) of a generic-form
    module, as text."""
    start = module_text.index('"func.func"()')
    end = module_text.rindex("}) : () -> ()")
    head = module_text[:module_text.index('"builtin.module"')]
    aliases = "\n".join(l for l in head.splitlines() if l.startswith(("#", "!")))
    return aliases, module_text[start:end].rstrip()


def import_step(model, batch, ga_opt="ga-opt", labels_key="labels",
                ignore_index=-100, reduction="mean", microbatches=1,
                data_parallel=1, name="step", train=False, clip=1.0,
                shift_labels=False, loss_fn=None, model_inputs=None,
                check=True, check_tolerance=1e-5, ga_run=None,
                dropout="refuse", log=sys.stderr, adamw=None,
                on_export=None):
    """The training step of `model` on `batch` as ga-opt MLIR text (see the
    module's docstring). With `loss_fn`, `model_inputs` names the entries of
    the batch that the model takes (by keyword; default: every entry but the
    labels): the others (rewards, group ids, masks) only the loss reads.

    `check` (default on): the step, run by ga-run (`ga_run`, default beside
    `ga_opt`) on the CPU on this batch, must give PyTorch's float64 loss and
    gradients within `check_tolerance` (see ga_import.check), else the
    import is refused naming the worst parameter; its cost is printed on
    `log` (None: quiet). `dropout`: 'refuse' (a model in training mode
    with dropout) or 'off' (the step without dropout).

    With `train=True`, `adamw` sets train.adamw's hyperparameters (a dict
    of beta1, beta2, eps, weight_decay; default torch.optim.AdamW's) and
    `clip=None` clips nothing (the norm is still returned); with `loss_fn`
    the training step returns no count. `on_export` is export_forward's
    hook (compile_step's cache)."""
    torch = _torch()
    if labels_key not in batch:
        raise ImportError_(f"the batch has no '{labels_key}' entry (the "
                           f"labels); it has {', '.join(batch) or 'none'}")
    if reduction not in ("mean", "sum"):
        raise ImportError_(f"reduction must be mean or sum, got "
                           f"'{reduction}'")
    for k, v in batch.items():
        if not isinstance(v, torch.Tensor):
            raise ImportError_(f"batch['{k}'] is a {type(v).__name__}, not "
                               "a tensor")
    labels = batch[labels_key]
    if labels.dtype != torch.int64:
        raise ImportError_(f"the labels must be int64, got {labels.dtype}")
    inputs = {k: v for k, v in batch.items() if k != labels_key}
    for k, v in batch.items():
        if v.dim() == 0 or v.shape[0] != labels.shape[0]:
            raise ImportError_(
                f"batch['{k}'] has shape {tuple(v.shape)}: every batch "
                f"entry's dimension 0 is the batch ({labels.shape[0]}, "
                "the labels')")
    if shift_labels and labels.dim() != 2:
        raise ImportError_(f"shift_labels needs labels [B, S], got shape "
                           f"{tuple(labels.shape)}")
    if loss_fn and shift_labels:
        raise ImportError_("loss_fn does not take shift_labels: the loss it "
                           "returns is the step's")
    adamw = _adamw_attributes(adamw)
    model_keys = list(inputs) if model_inputs is None else list(model_inputs)
    if model_inputs is not None:
        if not loss_fn:
            raise ImportError_("model_inputs needs loss_fn: the batch entries "
                               "the model does not take are the loss's")
        unknown = [k for k in model_keys if k not in inputs]
        if unknown:
            raise ImportError_(
                f"model_inputs names {', '.join(unknown)}, which the batch "
                f"does not have besides the labels (it has "
                f"{', '.join(inputs) or 'none'})")
    # The export takes the batch as the step does: the inputs, then the
    # labels.
    if not (isinstance(check_tolerance, (int, float)) and
            check_tolerance > 0):
        raise ImportError_(f"check_tolerance must be a positive number, got "
                           f"{check_tolerance!r}")
    rewritten = {}
    forward, names, params, logits = export_forward(
        model, {k: inputs[k] for k in model_keys}, shift=shift_labels,
        loss_fn=loss_fn, batch={**inputs, labels_key: labels},
        dropout=dropout, rewritten=rewritten, on_export=on_export)
    n = labels.numel() - (labels.shape[0] if shift_labels else 0)
    if loss_fn:
        element = re.fullmatch(r"tensor<(\w+)>", logits).group(1)
    else:
        rows, _, element = re.fullmatch(r"tensor<(\d+)x(\d+)x(\w+)>",
                                        logits).groups()
        if int(rows) != n:
            raise ImportError_(f"the model returns {rows} rows of logits "
                               f"for {n} labels")
    aliases, forward = _inner_func(forward)
    forward = forward.replace(
        'sym_name = "ga_forward"',
        'sym_name = "ga_forward", sym_visibility = "private"', 1)
    step = ImportedStep(None, names, params, [inputs[k] for k in inputs],
                        labels)
    if clip is not None and not (isinstance(clip, (int, float)) and
                                 clip > 0):
        raise ImportError_(f"clip must be positive or None, got {clip!r}")
    step._wrap = dict(ga_opt=ga_opt, aliases=aliases, forward=forward,
                      logits=logits, element=element, ignore_index=ignore_index,
                      reduction=reduction, name=name, train=train, clip=clip,
                      shift_labels=shift_labels, loss_fn=loss_fn is not None,
                      batch_names=[*inputs, labels_key], adamw=adamw)
    step.rewritten = rewritten

    def in_float64():
        """The same import in float64, checked at FLOAT64_BOUND."""
        from .modes import in_precision
        batch64 = {k: v.double() if v.is_floating_point() else v
                   for k, v in batch.items()}
        with in_precision(torch, model, torch.float64):
            return import_step(
                model, batch64, ga_opt=ga_opt, labels_key=labels_key,
                ignore_index=ignore_index, reduction=reduction, name=name,
                clip=clip, shift_labels=shift_labels, loss_fn=loss_fn,
                model_inputs=model_inputs, check=True,
                check_tolerance=FLOAT64_BOUND, ga_run=ga_run,
                dropout=dropout, log=None).check_result
    if check:
        single = any(p.is_floating_point() and p.dtype != torch.float64
                     for p in params)
        step.check_result = _check(torch, step, model, batch, names,
                                   ga_run or ga_run_beside(ga_opt),
                                   labels_key, loss_fn, model_keys,
                                   shift_labels, ignore_index, reduction,
                                   dropout, check_tolerance, log,
                                   in_float64 if single else None)
    return step.reschedule(microbatches, data_parallel)


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


# The bound of the second opinion's float64 step: its own rounding is
# about 1e-15, another meaning is off by far more.
FLOAT64_BOUND = 1e-9


def _check(torch, step, model, batch, names, ga_run, labels_key, loss_fn,
           model_keys, shift_labels, ignore_index, reduction, dropout,
           tolerance, log, in_float64=None):
    """The check against PyTorch (ga_import.check); refuses the import with
    the worst parameter, its error and its module when it fails, unless
    `in_float64` (the same import in float64) says that the difference is
    float32 rounding."""
    wrap = dict(step._wrap, train=False)
    text = _wrap(**wrap, names=step.param_names, params=step.params,
                 inputs=step.inputs, labels=step.labels, microbatches=1,
                 data_parallel=1)
    try:
        result = check_step(
            torch, text, [*step.params, *step.inputs, step.labels], model,
            batch, names, ga_run=ga_run, labels_key=labels_key,
            loss_fn=loss_fn, model_keys=model_keys,
            shift_labels=shift_labels, ignore_index=ignore_index,
            reduction=reduction, dropout=dropout, tolerance=tolerance,
            log=log)
    except RuntimeError as e:
        raise ImportError_(str(e)) from e
    if not result.ok and in_float64 is not None:
        try:
            second = in_float64()
        except ImportError_:
            second = None
        if second is not None and second.ok:
            result.float64 = second
            if log is not None:
                print(f"ga-import: warning: {result.summary()}", file=log)
            return result
    if not result.ok:
        raise ImportError_(_check_failure(model, result, step.rewritten))
    return result


def _check_failure(model, result, rewritten):
    """The refusal of a step that differs from PyTorch."""
    name, error = result.worst
    over = {n: e for n, e in result.errors.items() if e > result.bounds[n]}
    if not over or (result.loss_error > result.loss_bound and
                    result.loss_error / result.loss_bound >=
                    error / result.bounds[name]):
        what = (f"its loss is {result.loss:.9g}, PyTorch's "
                f"{result.loss64:.9g} (relative error "
                f"{result.loss_error:.1e}, bound {result.loss_bound:.0e})")
    else:
        owner = name.rpartition(".")[0]
        try:
            module = type(model.get_submodule(owner)).__name__ \
                if owner else type(model).__name__
        except AttributeError:
            module = "?"
        what = (f"the gradient of {name} (in a {module}) differs from "
                f"PyTorch's by {error:.1e} relative (bound "
                f"{result.bounds[name]:.0e}; PyTorch's own float32 "
                f"autograd: {result.torch_errors[name]:.0e})")
    others = sorted((e, n) for n, e in over.items() if n != name)[::-1][:3]
    also = ("; also " + ", ".join(f"{n} {e:.1e}" for e, n in others)
            if others else "")
    seen = (" (ga-import rewrote " + ", ".join(sorted(rewritten)) +
            " to PyTorch's conventions)" if rewritten else "")
    return (f"the imported step does not compute PyTorch's gradients on the "
            f"example batch: {what}{also}{seen}. A construct of the model "
            "or the loss is imported with another meaning than PyTorch's; "
            "the step is not written (check=False / --no-check skips this "
            "check)")


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


class ImportedStep:
    """What import_step made: `mlir` (the module's text), `param_names`
    (the model's state_dict keys, in the order of the step's parameter
    arguments), `params`, `inputs` and `labels` (the tensors of the
    example, in argument order: `arguments()` gives all of them),
    `rewritten` and `check_result`."""

    def __init__(self, mlir, param_names, params, inputs, labels):
        self.mlir, self.param_names = mlir, param_names
        self.params, self.inputs, self.labels = params, inputs, labels
        self._wrap = None
        # What ga-import wrote in PyTorch's conventions ({what: count}),
        # and the check against PyTorch (ga_import.check.CheckResult, None
        # with check=False).
        self.rewritten, self.check_result = {}, None

    def reschedule(self, microbatches=1, data_parallel=1):
        """The same step with another schedule (`microbatches` per rank,
        `data_parallel` ranks), without exporting the model again."""
        for what, v in (("microbatches", microbatches),
                        ("data_parallel", data_parallel)):
            if not isinstance(v, int) or v < 1:
                raise ImportError_(f"{what} must be a positive integer, "
                                   f"got {v!r}")
        step = ImportedStep(None, self.param_names, self.params, self.inputs,
                            self.labels)
        step._wrap = self._wrap
        step.rewritten, step.check_result = self.rewritten, self.check_result
        step.mlir = _wrap(**self._wrap, names=self.param_names,
                          params=self.params,
                          inputs=self.inputs, labels=self.labels,
                          microbatches=microbatches,
                          data_parallel=data_parallel)
        return step

    def arguments(self, lr=1e-3, step=1):
        """The example's arguments of the step function, in order: for a
        training step (train=True) also the AdamW moments (zeros), the
        learning rate `lr` and the step number `step`."""
        args = [*self.params, *self.inputs, self.labels]
        if self._wrap and self._wrap.get("train"):
            torch = _torch()
            zeros = [torch.zeros_like(p) for p in self.params]
            args += zeros + [z.clone() for z in zeros]
            args += [torch.tensor(lr, dtype=torch.float32),
                     torch.tensor(step, dtype=torch.int64)]
        return args
