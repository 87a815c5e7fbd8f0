"""ga-opt from PyTorch: a model's whole training step, compiled.

    import ga_opt
    step = ga_opt.compile_step(model, example_batch, microbatches=4)
    for batch in loader:
        out = step(batch)     # loss, grad_norm, count; parameters updated

compile_step exports the model and its loss (torch.export, through
torch-mlir), checks the imported step's loss and gradients against
PyTorch's float64 autograd on the example batch, splits the batch into
exact micro-batches (or refuses with the reason), compiles forward,
backward, clipping and AdamW into one library (ga-compile, for the CPU or
CUDA), caches it (ga_opt.cache) and loads it. See docs/pytorch.md.

The packages beside it: ga_import (the importer), ga_step (the step
library's binding); the tools (ga-opt, ga-run, ga-compile) are found by
ga_opt.tools.
"""

from .compile import compile_step, parse_bytes
from .errors import GaOptError
from .runner import CompiledStep, merge_sharded_states

__all__ = ["compile_step", "CompiledStep", "GaOptError",
           "merge_sharded_states", "parse_bytes"]
__version__ = "0.1.0"
