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

The modules, in the order an import runs through them: `export` (the
trace under `conventions`, `modes` and `keyed_sums`), `lowering`
(torch-mlir's linalg, its refusals, the stopped gradients), `locations`
(the user's lines), `step_text` (the step module around the forward
function), `check` (against PyTorch's float64 autograd) and `imported`
(import_step and the ImportedStep it returns); `errors` holds the
exceptions.
"""

from .errors import ImportError_, StopImport
from .export import export_forward
from .imported import FLOAT64_BOUND, ImportedStep, import_step
from .locations import user_location

__all__ = ["ImportError_", "ImportedStep", "StopImport", "import_step",
           "export_forward", "user_location", "FLOAT64_BOUND"]
