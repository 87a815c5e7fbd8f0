"""The compile cache: a compiled step per exported program, batch shapes,
options and compiler.

A step is looked up by a key computed before torch-mlir, the check and
ga-compile run: the digest of torch.export's program of the model and the
loss (its graph code, every submodule's, its signature and the constants
and buffers it holds, byte for byte), the batch's names, shapes and dtypes,
every option of compile_step that changes the step, the CPU the library is
compiled for, and the compiler's own digest (ga_opt.tools.compiler_version:
the tools' and the runtime's bytes, the Python sources that write the
step). The parameters' values are arguments of the step, not part of it.

Layout: `$GA_OPT_CACHE` (default `~/.cache/ga-opt/steps`), one directory
per key holding `libstep.so`, its header, `step.mlir` (what was compiled)
and `meta.json` (the step's parameter order, the plan, the import's check).
A directory is written under a temporary name and renamed into place, so a
reader never sees half of one.
"""

import hashlib
import json
import os
import platform
import shutil
import tempfile

from .tools import compiler_version


def cache_root():
    """The cache's directory (created on first use)."""
    root = os.environ.get("GA_OPT_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "ga-opt", "steps")
    return root


def _tensor_bytes(torch, t):
    t = t.detach().cpu().contiguous()
    if t.numel() == 0:
        return b""
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def program_digest(torch, program):
    """The digest of torch.export's program: what the step computes."""
    h = hashlib.sha256()
    for name, module in program.graph_module.named_modules():
        code = getattr(module, "code", None)
        if code is not None:
            h.update(f"module {name}\n{code}\n".encode())
    h.update(str(program.graph_signature).encode())
    held = {**{f"state:{k}": v for k, v in program.state_dict.items()},
            **{f"constant:{k}": v for k, v in program.constants.items()}}
    for name in sorted(held):
        value = held[name]
        h.update(name.encode())
        if isinstance(value, torch.Tensor):
            h.update(f"{value.dtype}{tuple(value.shape)}".encode())
            h.update(_tensor_bytes(torch, value))
        else:
            h.update(repr(value).encode())
    return h.hexdigest()


def _cpu_identity():
    """The host CPU the library is compiled for (ga-compile's --cpu
    native): its model and feature flags."""
    try:
        with open("/proc/cpuinfo") as f:
            lines = [l for l in f if l.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.processor() or platform.machine()


def step_key(program_hash, batch_spec, options):
    """The cache key of a step: the program's digest, the batch's spec
    (name -> (dtype, shape)), the options (a JSON-able dict) and the
    compiler."""
    h = hashlib.sha256()
    h.update(json.dumps({"program": program_hash, "batch": batch_spec,
                         "options": options, "cpu": _cpu_identity(),
                         "compiler": compiler_version()},
                        sort_keys=True).encode())
    return h.hexdigest()[:32]


def lookup(key):
    """The directory of a cached step and its meta.json, or (None, None)."""
    if os.environ.get("GA_OPT_CACHE_DISABLE"):
        return None, None
    path = os.path.join(cache_root(), key)
    try:
        with open(os.path.join(path, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None, None
    if not os.path.exists(os.path.join(path, "libstep.so")):
        return None, None
    return path, meta


class Entry:
    """A cache entry being written: files go into `path` (a temporary
    directory beside the final one); commit() renames it into place."""

    def __init__(self, key, enabled=True):
        self.key = key
        root = cache_root() if enabled else tempfile.gettempdir()
        os.makedirs(root, exist_ok=True)
        self.final = os.path.join(root, key)
        self.path = tempfile.mkdtemp(prefix=f".{key}-", dir=root)
        self.enabled = enabled

    def commit(self, meta):
        """Writes meta.json and moves the entry into place; returns its
        final directory (an uncached entry stays where it is)."""
        with open(os.path.join(self.path, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        if not self.enabled:
            return self.path
        try:
            os.rename(self.path, self.final)
        except OSError:  # written meanwhile by another process: use theirs
            shutil.rmtree(self.path, ignore_errors=True)
        return self.final

    def abandon(self):
        shutil.rmtree(self.path, ignore_errors=True)
