"""import_step: the model, the batch and the loss into a checked step
(the check against PyTorch's float64 autograd, with its float64 second
opinion), and the ImportedStep it returns."""

import re
import sys

from . import step_text
from .check import check_step, ga_run_beside
from .errors import ImportError_, torch_module as _torch
from .export import export_forward
from .step_text import _adamw_attributes, _inner_func

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
    text = step_text._wrap(**wrap, names=step.param_names, params=step.params,
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
        step.mlir = step_text._wrap(**self._wrap, names=self.param_names,
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
