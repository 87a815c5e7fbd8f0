"""The import's check against PyTorch: the imported step, compiled for the
CPU and run (ga-run) on the example batch at k = 1, against PyTorch's own
autograd of the same model and loss in float64.

The reference runs the user's module itself, its parameters (and floating
point buffers) replaced by float64 copies for the forward pass and the loss
(so a loss that reads a parameter by closure reads the copy), in the
training-mode semantics of the import (batch normalization on the batch's
statistics, dropout off). No copy of the model is made and the model is not
changed.

The bound of each error is the larger of `tolerance` and 10 times PyTorch's
own error in the model's precision (the same model and loss run by
PyTorch's autograd in float32, measured the same way): a step is refused
when it is further from float64 than PyTorch's float32 step is by an order
of magnitude, never for the rounding of a computation that PyTorch itself
rounds as much (two batch normalizations in a row, whose gradients cancel).
A float32 step over its bounds gets a second opinion (ga-import): the same
model and loss imported in float64 (its parameters and buffers converted in
place and restored) and checked at 1e-9. When that step matches PyTorch's
float64, the float32 step computes PyTorch's function and its difference is
rounding (ga-opt's float32 sums can round more than PyTorch's fused
kernels): it is kept, with a warning that says so (`float64` on the
result). When it does not, or cannot be imported, the step is refused.

The errors: the loss's error relative to the larger of |loss| and 1 (a loss
that is a small difference of terms of size about 1, as GRPO's with its
zero-mean advantages, is rounded on the terms' scale; the gradients carry
the loss's meaning) and, for every parameter, the error of
its gradient in the 2-norm relative to the larger of the gradient's own norm
and 1e-2 times the norm of all the step's gradients together. A gradient
that is zero in exact arithmetic (the bias before a batch normalization,
whose mean removes it) is float32 rounding noise in the step: it is
measured on the step's scale, as is a tiny gradient next to large ones (a
wrong one is still off by its own size: 100% of a gradient of 1e-3 of the
step's norm is an error of 0.1). Float32 steps are held to
`tolerance` (default 1e-5); a step that is not finite where PyTorch's is,
fails at any bound.
"""

import contextlib
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

__all__ = ["CheckResult", "check_step", "ga_run_beside"]

# A step may differ from float64 by this many times PyTorch's own autograd
# in the model's precision (float32) does, where that is above the bound:
# rounding of a step as exact as PyTorch's, not another meaning.
ROUNDING = 10


class CheckResult:
    """What the check measured: `loss`, `loss64` and `loss_error`, `errors`
    (parameter name -> relative error against float64), `bounds`
    (parameter name -> its bound), `worst` (the parameter furthest over or
    nearest to its bound, and its error), `seconds`; `torch_errors`, the
    same errors of PyTorch's own autograd in the model's precision."""

    def __init__(self, loss, loss64, errors, seconds, tolerance, loss32,
                 torch_errors):
        self.loss, self.loss64, self.errors = loss, loss64, errors
        self.seconds, self.tolerance = seconds, tolerance
        self.torch_errors = torch_errors
        self.loss_error = abs(loss - loss64) / max(abs(loss64), 1.0)
        self.loss_bound = max(tolerance, ROUNDING * abs(loss32 - loss64) /
                              max(abs(loss64), 1.0))
        self.bounds = {n: max(tolerance, ROUNDING * torch_errors[n])
                       for n in errors}
        # Set by ga-import when this float32 step is over its bounds but the
        # same import in float64 matches PyTorch's float64 (the result of
        # that check): float32 rounding, not another meaning.
        self.float64 = None
        self.worst = max(errors.items(),
                         key=lambda kv: kv[1] / self.bounds[kv[0]]) \
            if errors else ("", 0.0)

    @property
    def ok(self):
        return self.loss_error <= self.loss_bound and \
            all(e <= self.bounds[n] for n, e in self.errors.items())

    def summary(self):
        name, error = self.worst
        bound = self.bounds.get(name, self.tolerance)
        why = "" if bound <= self.tolerance else \
            f", {ROUNDING}x PyTorch's own float32 error"
        rounding = "" if self.float64 is None else (
            f"; over the bound, but the same step in float64 is within "
            f"{max(self.float64.loss_error, self.float64.worst[1]):.0e} of "
            f"PyTorch's float64: float32 rounding")
        return (f"loss error {self.loss_error:.1e}, worst gradient {name} "
                f"{error:.1e} (bound {bound:.1e}{why}){rounding}")


def ga_run_beside(ga_opt):
    """ga-run's path: beside `ga_opt` when that is a path, else on PATH."""
    if os.sep in ga_opt:
        return os.path.join(os.path.dirname(ga_opt), "ga-run")
    return "ga-run"


def _cast(t, dtype):
    t = t.detach()
    return t.to(dtype) if dtype is not None and t.is_floating_point() else t


def reference(torch, model, batch, names, labels_key, loss_fn, model_keys,
              shift_labels, ignore_index, reduction, dropout,
              dtype="float64"):
    """PyTorch's loss and gradients (in `names` order) of the import's model
    and loss: in float64 (`dtype`), or in the model's own precision
    (dtype=None)."""
    from .modes import computed_in, reparametrized, training_semantics
    F = torch.nn.functional
    dtype = getattr(torch, dtype) if dtype else None
    named = dict(model.named_parameters())
    ps = {n: _cast(named[n], dtype).requires_grad_(True) for n in names}
    state = dict(ps)
    for n, b in model.named_buffers():
        if b.is_floating_point():
            state[n] = _cast(b, dtype)
    cast = {k: _cast(v, dtype) for k, v in batch.items()}
    inputs = {k: cast[k] for k in model_keys}
    promoted = computed_in(torch, dtype) if dtype is not None \
        else contextlib.nullcontext()
    with torch.enable_grad(), training_semantics(torch, model, dropout), \
            reparametrized(torch, model, state), promoted:
        out = model(**inputs)
        if loss_fn:
            loss = loss_fn(out, cast)
        else:
            logits = getattr(out, "logits", out)
            if isinstance(logits, (tuple, list)):
                logits = logits[0]
            labels = batch[labels_key]
            if shift_labels:
                logits, labels = logits[:, :-1], labels[:, 1:]
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   labels.reshape(-1),
                                   ignore_index=ignore_index,
                                   reduction=reduction)
        loss = loss.double()
        grads = torch.autograd.grad(loss, [ps[n] for n in names],
                                    allow_unused=True)
    return float(loss.detach()), [
        np.zeros(tuple(ps[n].shape)) if g is None else g.detach().numpy()
        for g, n in zip(grads, names)]


def run_step(ga_run, text, arguments, n_results):
    """The step's results (loss, gradients) from ga-run on the CPU."""
    with tempfile.TemporaryDirectory(prefix="ga-import-check-") as work:
        src = os.path.join(work, "step.mlir")
        with open(src, "w") as f:
            f.write(text)
        paths = []
        for i, t in enumerate(arguments):
            paths.append(os.path.join(work, f"arg{i}.npy"))
            np.save(paths[-1], t.detach().cpu().numpy())
        out = os.path.join(work, "out")
        try:
            done = subprocess.run([ga_run, src, *paths, "--out-dir", out],
                                  capture_output=True, text=True)
        except OSError as e:
            raise RuntimeError(
                f"cannot run ga-run '{ga_run}' for the check against "
                f"PyTorch: {e.strerror} (pass ga_run=PATH, or check=False "
                "to skip the check)") from e
        if done.returncode:
            raise RuntimeError("ga-run could not run the imported step for "
                               "the check against PyTorch:\n"
                               + done.stderr[-3000:])
        return [np.load(os.path.join(out, f"result{i}.npy"))
                for i in range(n_results)]


def compare(names, grads, grads64):
    """Each gradient's error against float64 (see the module's
    docstring)."""
    scale = float(np.sqrt(sum(float(np.sum(np.square(g))) for g in grads64)))
    errors = {}
    for n, g, g64 in zip(names, grads, grads64):
        g = np.asarray(g, dtype=np.float64)
        if not np.all(np.isfinite(g)) and np.all(np.isfinite(g64)):
            errors[n] = float("inf")
            continue
        floor = max(float(np.linalg.norm(g64)), 1e-2 * scale, 1e-30)
        errors[n] = float(np.linalg.norm(g - g64)) / floor
    return errors


def check_step(torch, step_text, arguments, model, batch, names, *,
               ga_run, labels_key, loss_fn, model_keys, shift_labels,
               ignore_index, reduction, dropout, tolerance, log=sys.stderr):
    """Runs the check; returns a CheckResult (the caller refuses on
    `not result.ok`)."""
    start = time.perf_counter()
    got = run_step(ga_run, step_text, arguments, len(names) + 1)
    common = (torch, model, batch, names, labels_key, loss_fn, model_keys,
              shift_labels, ignore_index, reduction, dropout)
    loss64, grads64 = reference(*common)
    loss32, grads32 = reference(*common, dtype=None)
    loss = float(got[0])
    if not np.isfinite(loss) and np.isfinite(loss64):
        loss = float("inf")
    result = CheckResult(loss, loss64, compare(names, got[1:], grads64),
                         time.perf_counter() - start, tolerance,
                         loss32, compare(names, grads32, grads64))
    if log is not None:
        print(f"ga-import: checked against PyTorch's float64 autograd in "
              f"{result.seconds:.1f} s: {result.summary()}", file=log)
    return result
