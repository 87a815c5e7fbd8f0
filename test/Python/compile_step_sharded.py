"""ga_opt.compile_step on several ranks (data_parallel, shard) against
PyTorch's float64 loop, against each other, and resumed elsewhere.

  compile_step_sharded.py errors        # one process: the options refused
  mpirun -np 2 ... compile_step_sharded.py ranks DIR  # DIR/ranks.rankI.out
  compile_step_sharded.py resume DIR    # one process: DIR's state, one rank

The model and the batches are compile_step.py's (a transformers GPT-2 on
padded rows, B 8, clipping, AdamW with a warm-up). On 2 ranks, k = 2, for
every stage 0-3, 3 AdamW steps (after the errors of a wrong rank count
and a compile error of rank 0, which every rank raises): every loss
within 1e-5 relative of PyTorch's float64 loop and the parameters within its bound (10x PyTorch's
own float32 loop's distance); stage 1's parameters and gathered moments
bitwise stage 0's, stage 3's bitwise stage 2's (docs/distributed.md, "Why
it stays exact"); at stage 3 the module untouched until
gather_parameters(); at stage 2 a batch of other shapes, compiled again by
rank 0, whose loss is PyTorch's float64 loss; a stage-3 run checkpointed after 2 steps (the
module's state and the step's) and resumed in a new step takes the third
step bitwise, and so does a new step that loads the ranks' sharded states
(state_dict(sharded=True), the parameters' shards included) on a module
of the initial parameters. The stage-2 checkpoint after 2 steps (moments
gathered whole) and the stage-3 sharded states are written to DIR;
`resume` loads the first, and the second merged (merge_sharded_states),
into a one-rank step and takes the third step: its loss and parameters
within the same bounds of the float64 loop's third step.
"""

import copy
import functools
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_step as base  # noqa: E402  (the model, batches, loop)

import ga_opt  # noqa: E402
from ga_opt.errors import GaOptError  # noqa: E402

STEPS = 3


def reference():
    """PyTorch's float64 loop over the batches, and its float32 loop's
    distance from it: (losses, model, bound of the parameters)."""
    model = base.make_model()
    batches = [base.make_batch(s) for s in range(STEPS)]
    losses, ref64 = base.torch_loop(model, batches, torch.float64)
    _, ref32 = base.torch_loop(model, batches, torch.float32)
    bound = max(10 * base.max_param_diff(ref32, ref64), 1e-6)
    return model, batches, losses, ref64, bound


def compile_on(model, batch, stage, ranks=2, **options):
    return ga_opt.compile_step(model, batch, microbatches=2, lr=base.lr_at,
                               data_parallel=ranks, shard=stage,
                               **base.HYPER, **options)


def same_bits(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def check_against_float64(name, losses, model, ref_losses, ref64, bound):
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    diff = base.max_param_diff(model, ref64)
    base.report(f"{name}: float64 loop", worst <= 1e-5 and diff <= bound,
                f"loss within {worst:.1e} relative (bound 1e-5), parameters "
                f"within {diff:.1e} (bound {bound:.1e})")


def ranks(directory):
    # Each rank reports into DIR/ranks.rankI.out, each line naming its
    # rank (mpirun's merged output may join the ranks' lines).
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "?")
    sys.stdout = open(os.path.join(directory, f"ranks.rank{rank}.out"), "w",
                      buffering=1)
    report = base.report
    base.report = lambda name, ok, detail: report(f"rank {rank}: {name}",
                                                  ok, detail)
    model, batches, ref_losses, ref64, bound = reference()
    refused_on_ranks(model, batches[0])
    params, moments = {}, {}
    for stage in (0, 1, 2, 3):
        m = copy.deepcopy(model)
        step = compile_on(m, batches[0], stage)
        before = [p.detach().clone() for p in m.parameters()]
        losses = [float(step(b)["loss"]) for b in batches]
        if stage == 3:
            untouched = same_bits(before, m.parameters())
            step.gather_parameters()
            base.report("stage 3: module written by gather_parameters()",
                        untouched and not same_bits(before, m.parameters()),
                        "the module's parameters unchanged by the steps, "
                        "then the gathered shards")
        check_against_float64(f"stage {stage}", losses, m,
                              ref_losses, ref64, bound)
        params[stage] = [p.detach().clone() for p in m.parameters()]
        state = step.state_dict()
        moments[stage] = [state[w][n] for w in ("exp_avg", "exp_avg_sq")
                          for n in step.param_names]
        if stage == 2:
            new_shape(step, m)
        del step
    base.report("stage 1 = stage 0", same_bits(params[1], params[0]) and
                same_bits(moments[1], moments[0]),
                "parameters and gathered moments bitwise after "
                f"{STEPS} steps")
    base.report("stage 3 = stage 2", same_bits(params[3], params[2]) and
                same_bits(moments[3], moments[2]),
                "parameters and gathered moments bitwise after "
                f"{STEPS} steps")
    resume_stage3(model, batches, params[3])
    sharded_checkpoint(model, batches, params[3], directory)
    save_stage2(model, batches, directory)


def resume_stage3(model, batches, finished):
    """Two steps, a checkpoint, a new module and step, the third step."""
    m = copy.deepcopy(model)
    step = compile_on(m, batches[0], 3)
    for b in batches[:2]:
        step(b)
    step.gather_parameters()
    saved_model, saved_step = m.state_dict(), step.state_dict()
    del step
    again = copy.deepcopy(model)
    again.load_state_dict(saved_model)
    step = compile_on(again, batches[0], 3)
    step.load_state_dict(saved_step)
    step(batches[2])
    step.gather_parameters()
    base.report("stage 3: resumed", step.reused and
                same_bits(finished, again.parameters()),
                "a checkpoint after 2 steps, resumed by a new step (from "
                "the cache): the third step's parameters bitwise")


def new_shape(step, model):
    """A batch of 4 rows instead of 8: rank 0 compiles the step again, every
    rank runs it; its loss is PyTorch's float64 loss of the module before
    the step."""
    batch = base.make_batch(7, rows=4)
    m64 = copy.deepcopy(model).double()
    with torch.no_grad():
        logits = m64(input_ids=batch["input_ids"],
                     attention_mask=batch["attention_mask"]).logits
        want = float(torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, base.V),
            batch["labels"][:, 1:].reshape(-1)))
    got = float(step(batch)["loss"])
    error = abs(got - want) / abs(want)
    base.report("stage 2: a batch of new shapes", error <= 1e-5,
                f"compiled again on rank 0, run on every rank: loss within "
                f"{error:.1e} of PyTorch's float64 loss (bound 1e-5)")


def sharded_checkpoint(model, batches, finished, directory):
    """state_dict(sharded=True) after 2 steps at stage 3 (written to
    DIR/stage3.rankI.pt for `resume`), loaded by a new step on a module of
    the initial parameters: the third step's parameters bitwise. Another
    rank's shards are refused."""
    m = copy.deepcopy(model)
    step = compile_on(m, batches[0], 3)
    for b in batches[:2]:
        step(b)
    state = step.state_dict(sharded=True)
    torch.save(state, os.path.join(directory, f"stage3.rank{step.rank}.pt"))
    del step
    again = copy.deepcopy(model)
    step = compile_on(again, batches[0], 3)
    step.load_state_dict(state)
    step(batches[2])
    step.gather_parameters()
    held = sum(t.numel() for t in state["parameter_shards"].values())
    whole = sum(p.numel() for p in model.parameters())
    base.report("stage 3: sharded checkpoint",
                same_bits(finished, again.parameters()) and
                held == sum(-(-p.numel() // 2) for p in model.parameters()),
                f"the rank's shards ({held} of {whole} parameter elements) "
                "resumed on a module of the initial parameters: the third "
                "step's parameters bitwise")
    other = dict(state, shard=dict(state["shard"], rank=1 - step.rank))
    try:
        step.load_state_dict(other)
        base.report("error: another rank's shards", False, "not refused")
    except GaOptError as e:
        base.report("error: another rank's shards",
                    "merge_sharded_states" in str(e), str(e))


def save_stage2(model, batches, directory):
    m = copy.deepcopy(model)
    step = compile_on(m, batches[0], 2)
    for b in batches[:2]:
        step(b)
    state = step.state_dict()
    if step.rank == 0:
        torch.save({"model": m.state_dict(), "step": state},
                   os.path.join(directory, "stage2.pt"))


def resume(directory):
    """The 2-rank stage-2 checkpoint, resumed on one rank."""
    model, batches, ref_losses, ref64, bound = reference()
    saved = torch.load(os.path.join(directory, "stage2.pt"))
    model.load_state_dict(saved["model"])
    step = ga_opt.compile_step(model, batches[0], microbatches=2,
                               lr=base.lr_at, **base.HYPER)
    step.load_state_dict(saved["step"])
    loss = float(step(batches[2])["loss"])
    check_against_float64("2 ranks at stage 2, resumed on one", [loss],
                          model, ref_losses[2:], ref64, bound)
    # The ranks' sharded stage-3 states, merged: the parameters come with
    # them (the module given here has the initial ones).
    merged = ga_opt.merge_sharded_states(
        torch.load(os.path.join(directory, f"stage3.rank{i}.pt"))
        for i in (1, 0))
    fresh = base.make_model()
    step = ga_opt.compile_step(fresh, batches[0], microbatches=2,
                               lr=base.lr_at, **base.HYPER)
    step.load_state_dict(merged)
    loss = float(step(batches[2])["loss"])
    check_against_float64("2 ranks' sharded stage-3 states, merged, "
                          "resumed on one", [loss], fresh, ref_losses[2:],
                          ref64, bound)


def expect_refused(model, batch, name, needle, **options):
    """compile_step on a copy of `model` must raise a GaOptError holding
    `needle`."""
    try:
        ga_opt.compile_step(copy.deepcopy(model), batch, verbose=False,
                            **options)
    except GaOptError as e:
        base.report(f"error: {name}", needle in str(e), str(e))
        return
    base.report(f"error: {name}", False, "not refused")


def refused_on_ranks(model, batch):
    """Under mpirun -np 2: the wrong rank counts, before anything is
    compiled; rank 0's compile error raised on every rank."""
    refused = functools.partial(expect_refused, model, batch)

    refused("3 ranks asked, 2 started", "data_parallel=3, but mpirun "
            "started 2 ranks", data_parallel=3)
    refused("1 rank asked, 2 started", "mpirun started 2 ranks but the "
            "step runs on one", data_parallel=1)
    refused("rank 0's error on every rank", "memory_budget 65536 bytes "
            "fits no plan", data_parallel=2, shard=1, memory_budget=65536)


def errors():
    model = base.make_model()
    batch = base.make_batch(0)

    refused = functools.partial(expect_refused, model, batch)

    refused("not launched", "launch the program with `mpirun -np 2",
            data_parallel=2)
    refused("shard without ranks", "it needs data_parallel > 1", shard=1)
    refused("shard without optimizer", "it needs optimizer='adamw'",
            shard=2, data_parallel=2, optimizer=None)
    refused("stage", "shard must be 0 (replicated)", shard=4,
            data_parallel=2)
    refused("ranks", "data_parallel must be a positive integer",
            data_parallel=0)


def main():
    sys.stdout.reconfigure(line_buffering=True)
    what = sys.argv[1]
    if what == "errors":
        errors()
    elif what == "ranks":
        ranks(sys.argv[2])
    else:
        resume(sys.argv[2])
    print(f"compile_step_sharded {what}: {len(base.FAILED)} failed")
    sys.exit(1 if base.FAILED else 0)


if __name__ == "__main__":
    main()
