"""The export: torch.export of the model (and the loss) with the parameters
as arguments, under PyTorch's conventions, training semantics and stopped
gradients, through torch-mlir's FX importer; refusals at the user's line."""

import os
import re

from .conventions import ConventionError, PyTorchConventions
from .errors import ImportError_, StopImport, torch_module as _torch
from .keyed_sums import keyed_sums_mode
from .locations import _user_frames, _user_locations
from .lowering import (_inline_resources, _lower_to_linalg, _stop_gradients,
                       _tm_tensor_error)
from .modes import reparametrized, training_semantics

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
