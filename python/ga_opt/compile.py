"""compile_step: a PyTorch model's whole training step, imported, checked,
compiled, cached and loaded.

The stages, each printed with its time (verbose=True):

1. export: torch.export of the model and the loss on the example batch
   (ga_import.export_forward), whose program is the cache key's core
   (ga_opt.cache);
2. on a cache hit, the step library is loaded and nothing else runs;
3. import: torch-mlir's lowering, the step's text and the check of its
   loss and gradients against PyTorch's float64 autograd on the example
   batch (ga_import.import_step);
4. compile: ga-compile for the target (with the memory budget's plan);
5. the library is written into the cache and loaded (ga_step).

With data_parallel=r (under `mpirun -np r`), rank 0 takes stages 1-5 and
the other ranks load the library it wrote (ga_opt.ranks).
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
import weakref

from . import cache, ranks
from .errors import GaOptError
from .runner import CompiledStep, batch_spec
from .tools import tool

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(value, what="memory_budget"):
    """A byte count from an int or a string such as '20GiB', '512MB'."""
    if isinstance(value, bool):
        raise GaOptError(f"{what} must be a byte count, got {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise GaOptError(f"{what} must be positive, got {value}")
        return value
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise GaOptError(f"{what} must be a byte count such as 20GiB, "
                         f"512MiB or 1000000, got {value!r}")
    count = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if count <= 0:
        raise GaOptError(f"{what} must be positive, got {value!r}")
    return count


def _is_causal_lm(model):
    """transformers' causal language models shift their labels by one."""
    name = type(model).__name__
    return name.endswith(("ForCausalLM", "LMHeadModel"))


class _Log:
    def __init__(self, verbose, stream):
        self.verbose, self.stream = verbose, stream

    def __call__(self, message):
        if self.verbose:
            print(f"ga-opt: {message}", file=self.stream, flush=True)


def _check_options(optimizer, target, microbatches, memory_budget,
                   on_new_shape, lr, data_parallel=1, shard=0):
    if optimizer not in ("adamw", None):
        raise GaOptError(f"optimizer must be 'adamw' (the step updates the "
                         f"parameters) or None (the step writes p.grad), got "
                         f"{optimizer!r}")
    if target not in ("cpu", "cuda"):
        raise GaOptError(f"target must be cpu or cuda, got {target!r}")
    if microbatches == "auto":
        if memory_budget is None:
            raise GaOptError("microbatches='auto' needs memory_budget (the "
                             "planner chooses k under it)")
    elif isinstance(microbatches, bool) or not isinstance(microbatches, int) \
            or microbatches < 1:
        raise GaOptError(f"microbatches must be a positive integer or "
                         f"'auto', got {microbatches!r}")
    if on_new_shape not in ("compile", "refuse"):
        raise GaOptError(f"on_new_shape must be compile or refuse, got "
                         f"{on_new_shape!r}")
    if not (callable(lr) or isinstance(lr, (int, float)) or
            hasattr(lr, "item")):
        raise GaOptError(f"lr must be a number, a 0-d tensor or a callable "
                         f"of the step number, got {type(lr).__name__}")
    if isinstance(data_parallel, bool) or not isinstance(data_parallel, int) \
            or data_parallel < 1:
        raise GaOptError(f"data_parallel must be a positive integer (the "
                         f"number of ranks), got {data_parallel!r}")
    if shard not in (0, 1, 2, 3) or isinstance(shard, bool):
        raise GaOptError(f"shard must be 0 (replicated), 1 (optimizer "
                         f"state), 2 (and gradients) or 3 (and parameters), "
                         f"got {shard!r}")
    if shard and data_parallel == 1:
        raise GaOptError(f"shard={shard} divides the state among the ranks: "
                         "it needs data_parallel > 1")
    if shard and optimizer != "adamw":
        raise GaOptError(f"shard={shard} shards the optimizer's state and "
                         "the updated parameters: it needs optimizer='adamw' "
                         "(optimizer=None writes every whole p.grad)")
    if data_parallel > 1 and target == "cuda":
        raise GaOptError("data_parallel > 1 with target='cuda' is not "
                         "available from compile_step yet: train on several "
                         "GPUs with ga-train (docs/distributed.md)")


def _model_device(torch, model, target):
    devices = {p.device for p in model.parameters()}
    if not devices:
        raise GaOptError("the model has no parameters: nothing to train")
    if len(devices) > 1:
        raise GaOptError(f"the model's parameters lie on several devices "
                         f"({', '.join(sorted(map(str, devices)))}); a step "
                         "runs on one")
    device = devices.pop()
    if device.type != target:
        raise GaOptError(f"the model is on {device} but target is "
                         f"{target!r}: move the model (model.to"
                         f"('{target}')) or compile for target="
                         f"'{device.type}'")
    return device


def compile_step(model, example_batch, loss_fn=None, *, optimizer="adamw",
                 lr=3e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                 clip=1.0, microbatches=1, memory_budget=None, target="cpu",
                 labels_key="labels", shift_labels="auto", ignore_index=-100,
                 reduction="mean", model_inputs=None, check=True,
                 dropout="refuse",
                 cache_steps=True, on_new_shape="compile",
                 data_parallel=1, shard=0,
                 pipeline_options="", verbose=True, log=None):
    """The whole training step of `model` on batches shaped like
    `example_batch` (a dict of tensors, the labels under `labels_key`),
    compiled by ga-opt; see docs/pytorch.md.

    The loss is the cross-entropy of the model's logits against the labels
    (`reduction`, `ignore_index`; `shift_labels` 'auto': shifted by one for
    transformers' causal language models), or `loss_fn(outputs, batch)`.
    `optimizer='adamw'`: the step clips the gradients to a global norm of
    `clip` (None: no clipping) and takes torch.optim.AdamW's step (`lr`,
    `betas`, `eps`, `weight_decay`) on every parameter, in place;
    `optimizer=None`: the step writes the gradients into each `p.grad`.
    `microbatches`: k, split exactly (or refused with the reason), or
    'auto' with `memory_budget` (bytes, or '20GiB'): the planner's choice.
    `dropout`: 'refuse' a model in training mode with dropout, or 'off'.
    `data_parallel`: r ranks (the program launched by `mpirun -np r`,
    every rank passing the same global batch, of which it takes B/r rows);
    `shard`: what each rank holds 1/r of (1: AdamW's moments, 2: and the
    gradients, 3: and the parameters; docs/distributed.md).
    Returns a CompiledStep: `step(batch)` runs one step."""
    import torch
    import ga_import

    stream = log if log is not None else sys.stderr
    say = _Log(verbose, stream)
    _check_options(optimizer, target, microbatches, memory_budget,
                   on_new_shape, lr, data_parallel, shard)
    ranks.check_launch(data_parallel)
    budget = (parse_bytes(memory_budget) if memory_budget is not None
              else None)
    device = _model_device(torch, model, target)
    spec = batch_spec(torch, example_batch, labels_key)
    if shift_labels == "auto":
        shift_labels = loss_fn is None and _is_causal_lm(model)
    settings = dict(
        model=model, loss_fn=loss_fn, optimizer=optimizer, lr=lr,
        adamw=dict(beta1=float(betas[0]), beta2=float(betas[1]),
                   eps=float(eps), weight_decay=float(weight_decay)),
        clip=clip, microbatches=microbatches, budget=budget, target=target,
        labels_key=labels_key, shift_labels=bool(shift_labels),
        ignore_index=ignore_index, reduction=reduction,
        model_inputs=model_inputs, check=check, dropout=dropout,
        cache_steps=cache_steps, data_parallel=data_parallel, shard=shard,
        pipeline_options=pipeline_options, device=device, say=say)
    library = _build(torch, ga_import, example_batch, spec, settings)
    return CompiledStep(torch, library, settings, on_new_shape,
                        rebuild=lambda batch, s: _build(
                            torch, ga_import, batch, s, settings))


def _build(torch, ga_import, batch, spec, settings):
    """build_library on one rank; on several, rank 0 builds the library
    and broadcasts its directory (or its error) to the others, which load
    it. Every rank calls it with the same batch."""
    r = settings["data_parallel"]
    if r == 1:
        return build_library(torch, ga_import, batch, spec, settings)
    runtime = ranks.runtime(r)
    if runtime.rank != 0:
        said = json.loads(runtime.broadcast_text())
        if "error" in said:
            raise GaOptError(f"rank 0 did not build the step: "
                             f"{said['error']}", said.get("location"))
        with open(os.path.join(said["path"], "meta.json")) as f:
            meta = json.load(f)
        return _Library(said["path"], meta, reused=said["reused"])
    try:
        with ranks.without_launch_environment():
            library = build_library(torch, ga_import, batch, spec, settings)
    except BaseException as e:
        runtime.broadcast_text(json.dumps({
            "error": str(e) or type(e).__name__,
            "location": getattr(e, "location", None)}))
        raise
    runtime.broadcast_text(json.dumps({"path": library.path,
                                       "reused": library.reused}))
    return library


def _pipeline_options(settings):
    """ga-compile's --pipeline-options for the settings."""
    options = settings["pipeline_options"].split()
    if settings["shard"]:
        options.append(f"shard={settings['shard']}")
    if settings["budget"] is not None:
        options.append(f"memory-budget={settings['budget']}")
        if settings["microbatches"] == "auto":
            options.append("choose-microbatches=true")
    if settings["target"] == "cuda":
        import torch
        major, minor = torch.cuda.get_device_capability(settings["device"])
        options.append(f"chip=sm_{major}{minor}")
    return " ".join(options)


def _key_options(settings):
    """The options that change the compiled step, for the cache key."""
    keep = ("optimizer", "adamw", "clip", "microbatches", "budget", "target",
            "labels_key", "shift_labels", "ignore_index", "reduction",
            "model_inputs", "check", "dropout", "data_parallel", "shard")
    options = {k: settings[k] for k in keep}
    options["pipeline"] = _pipeline_options(settings)
    return options


def build_library(torch, ga_import, batch, spec, settings):
    """The loaded library of the step on batches shaped like `batch`: from
    the cache, else imported and compiled (and cached)."""
    say = settings["say"]
    model = settings["model"]
    cuda = settings["target"] == "cuda"
    # The import (and its check on the CPU) works on the CPU: a CUDA
    # model is exported from a copy of it there.
    source = copy.deepcopy(model).cpu() if cuda else model
    example = {k: v.detach().cpu() for k, v in batch.items()} if cuda \
        else {k: v.detach() for k, v in batch.items()}
    found = {}
    start = time.perf_counter()

    def on_export(program):
        key = cache.step_key(cache.program_digest(torch, program), spec,
                             _key_options(settings))
        found["key"] = key
        found["export_s"] = time.perf_counter() - start
        if settings["cache_steps"]:
            path, meta = cache.lookup(key)
            if path:
                found["path"], found["meta"] = path, meta
                raise ga_import.StopImport()

    k = 1 if settings["microbatches"] == "auto" else settings["microbatches"]
    try:
        imported = ga_import.import_step(
            source, example, ga_opt=tool("ga-opt"), ga_run=tool("ga-run"),
            labels_key=settings["labels_key"],
            ignore_index=settings["ignore_index"],
            reduction=settings["reduction"], microbatches=k,
            train=settings["optimizer"] == "adamw", clip=settings["clip"],
            shift_labels=settings["shift_labels"],
            data_parallel=settings["data_parallel"],
            loss_fn=settings["loss_fn"],
            model_inputs=settings["model_inputs"], check=settings["check"],
            dropout=settings["dropout"],
            log=settings["say"].stream if say.verbose else None,
            adamw=settings["adamw"], on_export=on_export)
    except ga_import.StopImport:
        say(f"exported in {found['export_s']:.1f} s; reused the compiled "
            f"step {found['key']} from {cache.cache_root()} (no import, no "
            "compile)")
        return _Library(found["path"], found["meta"], reused=True)
    except ga_import.ImportError_ as e:
        raise GaOptError(str(e), _location(str(e))) from None
    import_s = time.perf_counter() - start
    say(f"exported in {found['export_s']:.1f} s, imported and checked "
        f"against PyTorch in {import_s - found['export_s']:.1f} s")
    entry = cache.Entry(found["key"], enabled=settings["cache_steps"])
    try:
        src = os.path.join(entry.path, "step.mlir")
        with open(src, "w") as f:
            f.write(imported.mlir)
        plan = _compile(src, os.path.join(entry.path, "libstep.so"),
                        settings)
    except BaseException:
        entry.abandon()
        raise
    check = imported.check_result
    meta = {"param_names": imported.param_names, "plan": plan,
            "check": check.summary() if check is not None else None,
            "batch": spec}
    path = entry.commit(meta)
    return _Library(path, meta, reused=False,
                    temporary=not settings["cache_steps"])


def _location(message):
    """'file:line' of a located message, or None."""
    m = re.search(r"(?:^|\s|at |\()([^\s:()]+\.py):(\d+)", message)
    return f"{m.group(1)}:{m.group(2)}" if m else None


def _compile(src, lib, settings):
    """ga-compile's library of `src`; returns the memory plan (a dict) or
    None. Its stage times are printed as it prints them."""
    say = settings["say"]
    command = [tool("ga-compile"), src, "-o", lib,
               f"--target={settings['target']}"]
    options = _pipeline_options(settings)
    if options:
        command.append(f"--pipeline-options={options}")
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise GaOptError(_compile_error(done.stderr, settings),
                         _location(done.stderr))
    plan = None
    for line in done.stdout.splitlines():
        if line.startswith("compile_ms:"):
            say(f"compiled in {time.perf_counter() - start:.1f} s "
                f"({line.split('(', 1)[-1].rstrip(')')}, ms)")
        if line.startswith("memory_plan:"):
            plan = _parse_plan(line)
    if plan:
        say(f"plan: {plan['text']}")
    return plan


def _compile_error(stderr, settings):
    """ga-compile's error, without its temporary paths."""
    lines = [l for l in stderr.strip().splitlines()
             if not l.startswith("ga-compile: error: compiling")]
    text = "\n".join(lines[-40:]) or "ga-compile failed"
    if settings["budget"] is not None and "infeasible" in text:
        m = re.search(r"smallest peak the planner reaches is (\d+) bytes",
                      text)
        if m:
            text = (f"memory_budget {settings['budget']} bytes fits no plan: "
                    f"the smallest peak is {m.group(1)} bytes\n{text}")
    return text


def _parse_plan(line):
    """The fields of ga-compile's `memory_plan:` line."""
    text = line.split(":", 1)[1].strip()
    plan = {"text": text}
    for key, pattern in (("microbatches", r"microbatches (\d+)"),
                         ("planned_peak_bytes", r"planned peak (\d+)"),
                         ("budget_bytes", r"budget of (\d+)"),
                         ("checkpoints", r"(\d+) checkpoint"),
                         ("units", r"over (\d+) unit")):
        m = re.search(pattern, text)
        if m:
            plan[key] = int(m.group(1))
    m = re.search(r"recomputed ([0-9.]+%)", text)
    if m:
        plan["recomputed"] = m.group(1)
    return plan


class _Library:
    """A compiled step on disk: its directory, meta.json, and whether the
    cache gave it. An entry outside the cache (cache_steps=False) is a
    temporary directory, removed when this object goes away or the
    interpreter exits."""

    def __init__(self, path, meta, reused, temporary=False):
        self.path, self.meta, self.reused = path, meta, reused
        import ga_step
        self.step = ga_step.load(os.path.join(path, "libstep.so"))
        if temporary:
            weakref.finalize(self, shutil.rmtree, path, True)
