"""CompiledStep: the callable that compile_step returns.

One call is one whole training step on one batch (a dict of tensors on the
step's device): the compiled library takes the model's parameters, the
batch and, with optimizer='adamw', the AdamW moments, the learning rate and
the step number, and returns the new parameters and moments, the loss, the
gradients' global norm and the count of valid labels. The new parameters
are copied into the model's parameters (device to device for a CUDA step);
the moments are held by the CompiledStep, in two sets of buffers that the
step writes in turn. With optimizer=None the gradients are written into
each parameter's `.grad` directly.

With data_parallel=r and shard=s (docs/distributed.md), the moments held
are the rank's shards (s >= 1: c = ceil(n / r) elements of each flattened
parameter of n, padded with zeros); at s = 3 the parameters' shards are
held here too, and the module's parameters are written only by
gather_parameters(). state_dict() gathers the moments whole, so a
checkpoint resumes at any rank count and stage.
"""

import math

from . import ranks
from .errors import GaOptError


def batch_spec(torch, batch, labels_key):
    """{name: [dtype, shape]} of a batch; GaOptError for what a step cannot
    take."""
    if not isinstance(batch, dict) or not batch:
        raise GaOptError(f"a batch is a dict of tensors by name, got "
                         f"{type(batch).__name__}")
    spec = {}
    for k, v in batch.items():
        if not isinstance(v, torch.Tensor):
            raise GaOptError(f"batch['{k}'] is a {type(v).__name__}, not a "
                             "tensor")
        spec[k] = [str(v.dtype).replace("torch.", ""), list(v.shape)]
    if labels_key not in batch:
        raise GaOptError(f"the batch has no '{labels_key}' entry (the "
                         f"labels); it has {', '.join(batch)}")
    return spec


class CompiledStep:
    """A compiled training step of a model (see compile_step). Call it with
    a batch: `out = step(batch)` is a dict with `loss`, `grad_norm` and
    `count` (0-d tensors on the step's device; `count` None for a loss
    written in PyTorch). `plan` is the memory planner's plan (or None),
    `step_number` the number of steps taken, `reused` whether the compile
    cache gave the library, `library` its path."""

    def __init__(self, torch, library, settings, on_new_shape, rebuild):
        self._torch = torch
        self._settings = settings
        self._on_new_shape = on_new_shape
        self._rebuild = rebuild
        self._libraries = {}
        self.step_number = 0
        model = settings["model"]
        self._params = dict(model.named_parameters())
        self._add(library)
        self._example_spec = library.meta["batch"]
        self.param_names = library.meta["param_names"]
        missing = [n for n in self.param_names if n not in self._params]
        if missing:
            raise GaOptError(f"the step's parameters {', '.join(missing)} "
                             "are not the model's")
        self._data_parallel = settings.get("data_parallel", 1)
        self._stage = settings.get("shard", 0)
        self._runtime = (ranks.runtime(self._data_parallel)
                         if self._data_parallel > 1 else None)
        inputs = {t.name: t.shape for t in library.step.signature.inputs}
        self._moments = None
        if settings["optimizer"] == "adamw":
            # The moments as the step takes them: whole, or the rank's
            # shards (shard >= 1).
            zeros = [[torch.zeros(inputs[f"exp_avg.{n}"],
                                  dtype=self._params[n].dtype,
                                  device=self._params[n].device)
                      for n in self.param_names] for _ in range(4)]
            self._moments = zeros  # m, v, next m, next v
        self._shards = None
        if self._stage == 3:
            self._shards = [self._shard_of(self._params[n].detach(),
                                           inputs[n])
                            for n in self.param_names]
        self._new_params = None

    # ----------------------------------------------------------------------
    # What the step was compiled to.

    @property
    def plan(self):
        return self._first.meta.get("plan")

    @property
    def reused(self):
        return self._first.reused

    @property
    def library(self):
        return self._first.step.path

    @property
    def check(self):
        """The import check's summary against PyTorch's float64 autograd
        (None with check=False)."""
        return self._first.meta.get("check")

    def _add(self, library):
        key = self._shape_key(library.meta["batch"])
        if not self._libraries:
            self._first = library
        self._libraries[key] = library

    @staticmethod
    def _shape_key(spec):
        return tuple(sorted((k, v[0], tuple(v[1])) for k, v in spec.items()))

    # ----------------------------------------------------------------------
    # Shards (data_parallel=r, shard >= 1).

    @property
    def rank(self):
        """This process's rank (0 on one)."""
        return self._runtime.rank if self._runtime else 0

    def _shard_of(self, whole, shape):
        """The rank's shard of `whole` (flattened, zero-padded to r * c), or
        a copy of it where the step holds it whole."""
        torch = self._torch
        if self._stage == 0:
            return whole.clone()
        (c,) = shape
        flat = torch.zeros(self._data_parallel * c, dtype=whole.dtype,
                           device=whole.device)
        flat[:whole.numel()] = whole.reshape(-1)
        return flat[self.rank * c:(self.rank + 1) * c].clone()

    def _whole_of(self, shard, like):
        """The whole tensor shaped like `like` from every rank's `shard` (a
        collective: every rank calls it in the same order)."""
        torch = self._torch
        if self._stage == 0:
            return shard.detach().clone()
        gathered = self._runtime.all_gather(shard.detach().cpu().numpy())
        flat = torch.from_numpy(gathered.reshape(-1)[:like.numel()].copy())
        return flat.reshape(like.shape).to(like.device)

    def gather_parameters(self):
        """At shard=3, writes the whole parameters (gathered from every
        rank's shards) into the module's parameters, which the steps do not
        update; a collective: every rank calls it. Nothing to do at the
        other stages, whose steps update the module."""
        if self._shards is None:
            return
        torch = self._torch
        with torch.no_grad():
            for n, shard in zip(self.param_names, self._shards):
                p = self._params[n]
                p.copy_(self._whole_of(shard, p))

    # ----------------------------------------------------------------------
    # One step.

    def _library_for(self, batch):
        torch = self._torch
        labels_key = self._settings["labels_key"]
        spec = batch_spec(torch, batch, labels_key)
        want = self._example_spec
        missing = [k for k in want if k not in spec]
        extra = [k for k in spec if k not in want]
        if missing or extra:
            raise GaOptError(
                "the batch's keys differ from the example's: "
                + ("; ".join(filter(None, [
                    f"missing {', '.join(missing)}" if missing else "",
                    f"not in the example: {', '.join(extra)}" if extra
                    else ""]))))
        for k, (dtype, shape) in spec.items():
            if dtype != want[k][0]:
                raise GaOptError(f"batch['{k}'] is {dtype}, the step takes "
                                 f"{want[k][0]} (the example's)")
        device = self._settings["device"]
        for k, v in batch.items():
            if v.device != device:
                raise GaOptError(f"batch['{k}'] is on {v.device}, the step "
                                 f"runs on {device}")
        key = self._shape_key(spec)
        if key in self._libraries:
            return self._libraries[key]
        differ = [f"batch['{k}'] has shape {tuple(spec[k][1])}, the "
                  f"example's {tuple(want[k][1])}" for k in spec
                  if spec[k][1] != want[k][1]]
        if self._on_new_shape == "refuse":
            raise GaOptError("; ".join(differ) + " (on_new_shape='refuse': "
                             "the step is compiled for the example's shapes)")
        self._settings["say"]("a batch of new shapes (" + "; ".join(differ)
                              + "): compiling the step for them")
        library = self._rebuild(batch, spec)
        self._add(library)
        return library

    def _learning_rate(self):
        lr = self._settings["lr"]
        if callable(lr):
            lr = lr(self.step_number + 1)
        return float(lr)

    def _scalar(self, value, dtype):
        return self._torch.tensor(value, dtype=dtype,
                                  device=self._settings["device"])

    def __call__(self, batch):
        """One training step on `batch`: returns {'loss', 'grad_norm',
        'count'}."""
        library = self._library_for(batch)
        step = library.step
        params = ([self._params[n].detach() for n in self.param_names]
                  if self._shards is None else self._shards)
        named = {n: p for n, p in zip(self.param_names, params)}
        named.update({k: v.detach().contiguous() for k, v in batch.items()})
        if self._settings["optimizer"] == "adamw":
            return self._adamw_step(step, named, params)
        return self._gradient_step(step, named, params, batch)

    def _host(self, t):
        """What ga_step writes into: a NumPy view of a CPU tensor, the
        tensor itself on a device."""
        return t.numpy() if t.device.type == "cpu" else t

    def _run(self, step, named, out):
        import ga_step
        try:
            step(*step.arguments(named), out=[self._host(o) for o in out])
        except ga_step.StepError as e:
            raise GaOptError(str(e)) from None
        if step.on_device:
            # The step's own stream wrote the results: PyTorch's streams
            # read them after it.
            self._torch.cuda.synchronize()

    def _adamw_step(self, step, named, params):
        torch = self._torch
        m, v, next_m, next_v = self._moments
        lr = self._learning_rate()
        t = self.step_number + 1
        for n, a, b in zip(self.param_names, m, v):
            named[f"exp_avg.{n}"] = a
            named[f"exp_avg_sq.{n}"] = b
        named["lr"] = self._scalar(lr, torch.float32)
        named["step"] = self._scalar(t, torch.int64)
        if self._new_params is None:
            self._new_params = [torch.empty_like(p) for p in params]
        loss = torch.empty((), dtype=params[0].dtype,
                           device=params[0].device)
        norm = torch.empty_like(loss)
        results = [*self._new_params, *next_m, *next_v, loss, norm]
        count = None
        if len(step.signature.results) == len(results) + 1:
            count = self._scalar(0, torch.int64)
            results.append(count)
        self._run(step, named, results)
        if self._shards is not None:
            # Stage 3: the new shards are held; the module is written by
            # gather_parameters().
            self._shards, self._new_params = self._new_params, self._shards
        else:
            with torch.no_grad():
                for p, new in zip(params, self._new_params):
                    p.copy_(new)
        self._moments = [next_m, next_v, m, v]
        self.step_number = t
        return {"loss": loss, "grad_norm": norm, "count": count}

    def _gradient_step(self, step, named, params, batch):
        torch = self._torch
        grads = []
        for n in self.param_names:
            p = self._params[n]
            if p.grad is None or p.grad.shape != p.shape or \
                    p.grad.dtype != p.dtype or not p.grad.is_contiguous():
                p.grad = torch.empty_like(p.detach(),
                                          memory_format=torch.contiguous_format)
            grads.append(p.grad)
        loss = torch.empty((), dtype=params[0].dtype,
                           device=params[0].device)
        self._run(step, named, [loss, *grads])
        self.step_number += 1
        norm = torch.linalg.vector_norm(torch.stack(
            [torch.linalg.vector_norm(g, dtype=torch.float64)
             for g in grads])).to(loss.dtype)
        return {"loss": loss, "grad_norm": norm, "count": self._count(batch)}

    def _count(self, batch):
        """The valid labels of a cross-entropy step (None for loss_fn)."""
        s = self._settings
        if s["loss_fn"] is not None:
            return None
        labels = batch[s["labels_key"]]
        if s["shift_labels"]:
            labels = labels[:, 1:]
        return (labels != s["ignore_index"]).sum()

    # ----------------------------------------------------------------------
    # Checkpoints.

    def state_dict(self, sharded=False):
        """The step's optimizer state, as torch.optim's: the step number,
        the hyperparameters, and per parameter (by name) AdamW's two
        moments (copies), whole (at shard >= 1 gathered from every rank's
        shards: a collective, every rank calls it).

        `sharded=True` (shard >= 1): this rank's shards as held, with
        `"shard"`: {rank, ranks, stage, shapes (the whole parameters')} and
        at shard=3 also the parameters' shards (`"parameter_shards"`); no
        rank holds a whole tensor and nothing is communicated. It resumes
        on the same rank and rank count; merge_sharded_states assembles
        the ranks' states whole for any other."""
        state = {"step": self.step_number,
                 "adamw": dict(self._settings["adamw"]),
                 "optimizer": self._settings["optimizer"]}
        if sharded:
            if not self._stage:
                raise GaOptError("state_dict(sharded=True): this step holds "
                                 "no shards (shard=0)")
            state["shard"] = {
                "rank": self.rank, "ranks": self._data_parallel,
                "stage": self._stage,
                "shapes": {n: list(self._params[n].shape)
                           for n in self.param_names}}

        def held(tensors):  # {name: copy}, as held or gathered whole
            return {n: t.detach().clone() if sharded
                    else self._whole_of(t, self._params[n])
                    for n, t in zip(self.param_names, tensors)}
        if self._moments is not None:
            state["exp_avg"] = held(self._moments[0])
            state["exp_avg_sq"] = held(self._moments[1])
        if sharded and self._shards is not None:
            state["parameter_shards"] = held(self._shards)
        return state

    def load_state_dict(self, state):
        """Restores what state_dict() saved (bit for bit): a resumed run
        takes the same steps as one that did not stop. Whole moments are
        sharded for this rank; at shard=3 the parameters' shards are taken
        from the module's parameters again (load the module's state
        first), or from the state's `"parameters"` (merge_sharded_states'
        of a stage-3 run), which are written into the module. A sharded
        state (state_dict(sharded=True)) is taken as held, by the same rank
        of the same rank count and stage."""
        if state.get("optimizer") != self._settings["optimizer"]:
            raise GaOptError(f"the state is of optimizer "
                             f"{state.get('optimizer')!r}, this step's is "
                             f"{self._settings['optimizer']!r}")
        if state.get("adamw") != self._settings["adamw"]:
            raise GaOptError(f"the state's AdamW hyperparameters "
                             f"{state.get('adamw')} differ from this step's "
                             f"{self._settings['adamw']}")
        if "shard" in state:
            self._load_shards(state)
            return
        if "parameters" in state:
            with self._torch.no_grad():
                for n in self.param_names:
                    self._params[n].copy_(state["parameters"][n])
        if self._moments is not None:
            for which, held in (("exp_avg", self._moments[0]),
                                ("exp_avg_sq", self._moments[1])):
                saved = state.get(which, {})
                missing = [n for n in self.param_names if n not in saved]
                if missing:
                    raise GaOptError(f"the state has no {which} of "
                                     f"{', '.join(missing)}")
                for n, t in zip(self.param_names, held):
                    whole = tuple(self._params[n].shape)
                    if tuple(saved[n].shape) != whole:
                        raise GaOptError(
                            f"{which} of {n} has shape "
                            f"{tuple(saved[n].shape)}, the parameter "
                            f"{whole}")
                    t.copy_(self._shard_of(saved[n].to(t.device), t.shape))
        if self._shards is not None:
            for n, shard in zip(self.param_names, self._shards):
                shard.copy_(self._shard_of(self._params[n].detach(),
                                           shard.shape))
        self.step_number = int(state["step"])

    def _load_shards(self, state):
        """load_state_dict of a sharded state."""
        held = state["shard"]
        mine = {"rank": self.rank, "ranks": self._data_parallel,
                "stage": self._stage}
        if {k: held.get(k) for k in mine} != mine:
            raise GaOptError(
                f"the state holds the shards of rank {held.get('rank')} of "
                f"{held.get('ranks')} at shard={held.get('stage')}; this is "
                f"rank {mine['rank']} of {mine['ranks']} at shard="
                f"{mine['stage']}: assemble the ranks' states with "
                "ga_opt.merge_sharded_states to resume on another schedule")
        sets = [("exp_avg", self._moments[0]),
                ("exp_avg_sq", self._moments[1])]
        if self._shards is not None:
            sets.append(("parameter_shards", self._shards))
        for which, tensors in sets:
            saved = state.get(which, {})
            for n, t in zip(self.param_names, tensors):
                if n not in saved or tuple(saved[n].shape) != tuple(t.shape):
                    raise GaOptError(f"the state's {which} of {n} is not "
                                     f"this rank's shard ({tuple(t.shape)})")
                t.copy_(saved[n])
        self.step_number = int(state["step"])


def merge_sharded_states(states):
    """The whole state (as state_dict() returns it) from every rank's
    state_dict(sharded=True), in any order; with `"parameters"` (whole)
    where the shards held them (shard=3). It resumes on any number of
    ranks and at any stage (load_state_dict)."""
    import torch
    states = list(states)
    if not states or any("shard" not in s for s in states):
        raise GaOptError("merge_sharded_states takes the state_dict("
                         "sharded=True) of every rank")
    ranks = states[0]["shard"]["ranks"]
    got = sorted(s["shard"]["rank"] for s in states)
    if got != list(range(ranks)):
        raise GaOptError(f"merge_sharded_states: the states of ranks "
                         f"{got}, expected one of each of 0..{ranks - 1}")
    by_rank = {s["shard"]["rank"]: s for s in states}
    first = by_rank[0]
    shapes = first["shard"]["shapes"]
    merged = {k: first[k] for k in ("step", "adamw", "optimizer")}
    for which, into in (("exp_avg", "exp_avg"),
                        ("exp_avg_sq", "exp_avg_sq"),
                        ("parameter_shards", "parameters")):
        if which not in first:
            continue
        merged[into] = {}
        for n, shape in shapes.items():
            flat = torch.cat([by_rank[i][which][n].reshape(-1).cpu()
                              for i in range(ranks)])
            merged[into][n] = flat[:math.prod(shape)].reshape(shape).clone()
    return merged
