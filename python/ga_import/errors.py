"""ga-import's exceptions, and torch (with torch-mlir) or a clear error."""


class StopImport(Exception):
    """Raised by an `on_export` hook to stop import_step after the export
    (compile_step, whose cache holds the step of that program); it passes
    through import_step as it is."""


class ImportError_(RuntimeError):
    """A model or batch that ga-import cannot turn into a step; the message
    says what and why."""


def torch_module():
    """torch, after checking that torch-mlir is there too."""
    try:
        import torch
        import torch_mlir.fx  # noqa: F401
    except ModuleNotFoundError as e:
        raise ImportError_(
            f"ga-import needs torch and torch-mlir ({e.name} is missing): "
            "run scripts/setup_frontend.sh and use the python it prints")
    return torch
