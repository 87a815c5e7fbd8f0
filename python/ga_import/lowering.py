"""torch-mlir's lowering of the export to linalg on tensors, its refusals
(the op, the PyTorch call behind it, the user's line, what to do), the
stopped gradients carried through it, and the resources it leaves."""

import re

from .errors import ImportError_
from .locations import _loc_end, _location_frames, _user_frames, user_location

# The name of the declared function that carries ga::stop_gradient through
# torch-mlir's lowering (ga_import.export).
_CARRIER = "ga_stop_gradient_"


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
