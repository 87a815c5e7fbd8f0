"""The Hugging Face Trainer with ga-opt's compiled step.

    from ga_opt.integrations.transformers import GaOptTrainer
    trainer = GaOptTrainer(model, args, train_dataset=..., data_collator=...)
    trainer.train()

`args.per_device_train_batch_size` (B) and `args.gradient_accumulation_steps`
(k) are taken as the schedule: the Trainer hands the step whole global
batches of B * k rows (its own accumulation is set to 1), and the compiled
step computes their loss and gradients in k exact micro-batches of B rows
(ga_opt.compile_step with optimizer=None: the gradients land in each
`p.grad`). The Trainer keeps everything else: its optimizer and learning
rate schedule, gradient clipping (`max_grad_norm`), logging of the loss and
the gradient norm, evaluation and checkpoints. The loss is the model's
causal-LM cross-entropy, or the Trainer's `compute_loss_func(outputs,
labels, num_items_in_batch)`, which ga-opt imports with the model: a mean
over the valid labels is rewritten into a sum over the global batch's count,
so the step is exact whether or not the function reads
`num_items_in_batch` (ga-opt passes None).

`ga_opt_options` are further keyword arguments of compile_step (check,
memory_budget, pipeline_options, verbose, ...). The step is compiled on
the first batch (the compile cache makes later runs load it); batches of
other shapes compile once more, so pad to a fixed length.
"""

import dataclasses

import torch
from transformers import Trainer

from ..compile import compile_step

__all__ = ["GaOptTrainer"]


class GaOptTrainer(Trainer):
    """transformers.Trainer whose forward and backward pass is ga-opt's
    compiled step over the whole global batch (see the module)."""

    def __init__(self, model=None, args=None, *, ga_opt_options=None,
                 **kwargs):
        if args is None:
            raise TypeError("GaOptTrainer needs TrainingArguments (its batch "
                            "size and accumulation steps are the schedule)")
        self.microbatches = int(args.gradient_accumulation_steps)
        args = dataclasses.replace(
            args, per_device_train_batch_size=(
                args.per_device_train_batch_size * self.microbatches),
            gradient_accumulation_steps=1)
        self.ga_opt_options = dict(ga_opt_options or {})
        self.compiled_step = None
        super().__init__(model=model, args=args, **kwargs)

    def _loss_fn(self):
        """compute_loss_func as ga-opt's loss_fn (or None: the model's
        cross-entropy)."""
        user = self.compute_loss_func
        if user is None:
            return None
        return lambda outputs, batch: user(outputs, batch["labels"],
                                           num_items_in_batch=None)

    def training_step(self, model, inputs, num_items_in_batch=None):
        """One global batch through the compiled step: the gradients into
        each p.grad; returns the loss (for the Trainer's logging)."""
        inputs = self._prepare_inputs(inputs)
        batch = {k: v for k, v in inputs.items()
                 if isinstance(v, torch.Tensor)}
        if self.compiled_step is None:
            target = self.args.device.type
            self.compiled_step = compile_step(
                self.model, batch, loss_fn=self._loss_fn(), optimizer=None,
                microbatches=self.microbatches, target=target,
                **self.ga_opt_options)
        out = self.compiled_step(batch)
        return out["loss"].detach()
