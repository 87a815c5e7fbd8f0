"""The model's state while it is traced: its parameters as the step's
arguments, and PyTorch's training-mode semantics where a step can hold them.

- `reparametrized`: the model's parameters replaced by the traced
  arguments for the model's forward *and* the loss, so that a loss reading
  a parameter by closure (a learnable temperature, an L2 penalty over
  `model.parameters()`, an LM head applied inside the loss) differentiates
  it instead of baking in its import-time value.
- `training_semantics`: a model in `train()` mode is traced as PyTorch
  trains it. Batch normalization normalizes with the batch's statistics
  (the running statistics are neither read nor updated by the step; the
  split analysis then refuses a split of it, or `batch-statistics=prepass`
  proves one). Dropout that would draw random numbers is refused (a step
  that ga-opt splits bit for bit draws none) unless `dropout="off"` asks
  for the step without it. Every module's mode is restored afterwards.
- `in_precision`: the model's floating point parameters and buffers in
  another precision (float64, for the check's second opinion), the same
  tensors (a loss's closure that holds a parameter sees it), restored to
  their own types afterwards.
- `computed_in`: every floating point tensor an operation reads is taken in
  the reference's precision first, so that a tensor the model or the loss
  holds outside its parameters and buffers (a class weight read by the
  loss's closure, a plain tensor attribute of a module) and a cast the
  model writes (`x.to(torch.float32)`, `.float()`) keep the float64
  reference in float64 instead of mixing precisions or failing.
"""

import contextlib

from .conventions import ConventionError

__all__ = ["reparametrized", "training_semantics", "active_dropout",
           "computed_in", "in_precision"]


def reparametrized(torch, model, params):
    """A context in which `model`'s parameters named in `params` are those
    tensors (tied parameters follow), for its forward and for any code
    that reads them through the module."""
    from torch.nn.utils.stateless import _reparametrize_module
    return _reparametrize_module(model, params, tie_weights=True)


def active_dropout(torch, model):
    """(qualified name, p) of the first dropout module that is in training
    mode with p > 0, or None."""
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and \
                m.training and m.p > 0:
            return name or type(m).__name__, m.p
    return None


@contextlib.contextmanager
def training_semantics(torch, model, dropout="refuse"):
    """While active: `model` in eval mode but for its batch normalizations
    that were in training mode, which normalize with the batch's statistics
    and leave their running statistics alone. `dropout="refuse"` raises
    ConventionError for a dropout module in training mode (the functional
    form is refused where it is called, by PyTorchConventions);
    `dropout="off"` traces it as in eval mode."""
    if dropout not in ("refuse", "off"):
        raise ConventionError(f"dropout must be 'refuse' or 'off', got "
                              f"{dropout!r}")
    if dropout == "refuse":
        found = active_dropout(torch, model)
        if found:
            raise ConventionError(
                f"the model is in training mode with dropout ({found[0]}, "
                f"p = {found[1]}): a step that ga-opt splits bit for bit "
                "draws no random numbers; call model.eval() before the "
                "import, or pass dropout='off' (--dropout=off) for the step "
                "without dropout")
    modes = {m: m.training for m in model.modules()}
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
             and m.training]
    tracking = {m: m.track_running_stats for m in norms}
    model.eval()
    for m in norms:
        m.training = True
        m.track_running_stats = False
    try:
        yield norms
    finally:
        for m, training in modes.items():
            m.training = training
        for m, track in tracking.items():
            m.track_running_stats = track


def computed_in(torch, dtype):
    """A context in which the floating point tensors that every operation
    reads, and the results of the casts between floating point types, are
    in `dtype`. In-place operations keep their destination's type."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_map
    casts = {torch.Tensor.to, torch.Tensor.type, torch.Tensor.float,
             torch.Tensor.half, torch.Tensor.bfloat16, torch.Tensor.double}

    def promote(t):
        if isinstance(t, torch.Tensor) and t.is_floating_point() and \
                t.dtype != dtype:
            return t.to(dtype)
        return t

    class ComputedIn(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if not getattr(func, "__name__", "").endswith("_"):
                args, kwargs = tree_map(promote, (args, kwargs))
            out = func(*args, **kwargs)
            return tree_map(promote, out) if func in casts else out

    return ComputedIn()


@contextlib.contextmanager
def in_precision(torch, model, dtype):
    """The model's floating point parameters and buffers in `dtype` within
    the context (their `.data`, so that every holder of the tensor sees
    it), each restored to its own type (exactly: float32 -> float64 ->
    float32 loses nothing) afterwards."""
    tensors = [t for t in (*model.parameters(), *model.buffers())
               if t.is_floating_point()]
    types = [t.dtype for t in tensors]
    try:
        for t in tensors:
            t.data = t.data.to(dtype)
        yield
    finally:
        for t, old in zip(tensors, types):
            t.data = t.data.to(old)
