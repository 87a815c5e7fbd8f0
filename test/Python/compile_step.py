"""ga_opt.compile_step against PyTorch, its cache, its checkpoints and its
errors.

  compile_step.py first   # compiles; every check below
  compile_step.py second  # a second process: the cache gives the step

A transformers GPT-2 (bytes, 2 layers, D 32) on padded rows (labels -100
where the attention mask is 0), k = 2 micro-batches:

- the whole step (clipping, AdamW with non-default hyperparameters and a
  learning rate that is a callable of the step) for 4 steps against
  PyTorch's own loop (clip_grad_norm_, torch.optim.AdamW) on a float64
  copy of the model: the loss within 1e-5 relative at every step, the
  parameters within 10x what PyTorch's own float32 loop is off from the
  float64 one (and 1e-6 absolute at least);
- optimizer=None (with cache_steps=False: its library in a temporary
  directory, removed with the step): every p.grad against PyTorch's float64 autograd of the
  full batch, within 1e-5 relative (in the 2-norm, against the larger of
  its norm and 1e-2 of all of them, as the import check measures);
- state_dict / load_state_dict: 2 steps, a checkpoint, a new model and a
  new step (from the cache) that loads it and takes the third: bitwise the
  parameters of a run of 3 steps;
- errors: a missing key, another dtype, another shape with
  on_new_shape='refuse' (then compiled with 'compile'), a model on the
  wrong device, a budget no plan fits (the smallest peak named), a loss
  that cannot be split exactly (refused at its line in this file).

The second process checks that the cache was used: no import (torch-mlir's
lowering and the check are replaced by failures) and no ga-compile.
"""

import copy
import gc
import io
import os
import re
import sys

import torch
import torch.nn.functional as F

import ga_import
import ga_import.export
import ga_opt
import ga_opt.compile

os.environ["HF_HUB_OFFLINE"] = "1"
FAILED = []
B, S, V = 8, 16, 64
LR = 2e-3
HYPER = dict(betas=(0.8, 0.99), eps=1e-7, weight_decay=0.1, clip=0.5)


def report(name, ok, detail):
    print(f"{'PASS' if ok else 'FAIL'}: {name}: {detail}")
    if not ok:
        FAILED.append(name)


def make_model():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(
        vocab_size=V, n_positions=S, n_embd=32, n_layer=2, n_head=4,
        attn_implementation="eager", bos_token_id=0, eos_token_id=0)).eval()


def make_batch(seed, rows=B):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, V, (rows, S), generator=gen)
    mask = torch.ones(rows, S, dtype=torch.int64)
    mask[1, 9:] = 0
    mask[rows - 2, 4:] = 0
    labels = ids.clone()
    labels[mask == 0] = -100
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def lr_at(t):
    return LR * min(1.0, t / 2)  # a warm-up over 2 steps


def torch_loop(model, batches, dtype):
    """PyTorch's own training loop in `dtype`: (losses, model)."""
    model = copy.deepcopy(model).to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=HYPER["betas"],
                            eps=HYPER["eps"],
                            weight_decay=HYPER["weight_decay"])
    losses = []
    for t, b in enumerate(batches, 1):
        for g in opt.param_groups:
            g["lr"] = lr_at(t)
        logits = model(input_ids=b["input_ids"],
                       attention_mask=b["attention_mask"]).logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                               b["labels"][:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), HYPER["clip"])
        opt.step()
        losses.append(float(loss.detach()))
    return losses, model


def max_param_diff(a, b):
    return max(float((p.double() - q.double()).abs().max())
               for p, q in zip(a.parameters(), b.parameters()))


def whole_step():
    model = make_model()
    batches = [make_batch(s) for s in range(4)]
    ref64_losses, ref64 = torch_loop(model, batches, torch.float64)
    _, ref32 = torch_loop(model, batches, torch.float32)
    step = ga_opt.compile_step(model, batches[0], microbatches=2, lr=lr_at,
                               **HYPER)
    losses = [float(step(b)["loss"]) for b in batches]
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref64_losses))
    report("whole step: loss", worst <= 1e-5,
           f"{len(losses)} AdamW steps, k = 2, worst relative error of the "
           f"loss against PyTorch's float64 loop {worst:.1e} (bound 1e-5)")
    own = max_param_diff(ref32, ref64)
    diff = max_param_diff(model, ref64)
    bound = max(10 * own, 1e-6)
    report("whole step: parameters", diff <= bound,
           f"largest difference from PyTorch's float64 loop {diff:.1e} "
           f"(PyTorch's float32 loop: {own:.1e}; bound {bound:.1e})")
    return step


def gradients():
    model = make_model()
    batch = make_batch(7)
    step = ga_opt.compile_step(model, batch, optimizer=None, microbatches=2,
                               verbose=False, cache_steps=False)
    out = step(batch)
    # Outside the cache: a temporary directory, gone with the step.
    folder = os.path.dirname(step.library)
    cache_root = os.path.realpath(os.environ["GA_OPT_CACHE"])
    outside = not os.path.realpath(folder).startswith(cache_root + os.sep)
    there = os.path.exists(step.library)
    del step
    gc.collect()
    report("cache_steps=False", outside and there
           and not os.path.exists(folder),
           f"library outside the cache: {outside}, present while the step "
           f"lives: {there}, removed after: {not os.path.exists(folder)}")
    m64 = copy.deepcopy(model).double()
    logits = m64(input_ids=batch["input_ids"],
                 attention_mask=batch["attention_mask"]).logits
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, V),
                           batch["labels"][:, 1:].reshape(-1))
    grads = torch.autograd.grad(loss, list(m64.parameters()))
    total = float(torch.sqrt(sum((g ** 2).sum() for g in grads)))
    worst, where = 0.0, None
    for (name, p), g in zip(model.named_parameters(), grads):
        e = float((p.grad.double() - g).norm()) / max(float(g.norm()),
                                                      1e-2 * total)
        if e > worst:
            worst, where = e, name
    count = int((batch["labels"][:, 1:] != -100).sum())
    report("optimizer=None: p.grad", worst <= 1e-5 and
           int(out["count"]) == count,
           f"worst relative error {worst:.1e} ({where}) against PyTorch's "
           f"float64 autograd of the full batch (bound 1e-5); loss "
           f"{float(out['loss']):.7f} vs {float(loss):.7f}; count "
           f"{int(out['count'])} of {count}")


def resume():
    batches = [make_batch(10 + s) for s in range(3)]
    straight = make_model()
    step = ga_opt.compile_step(straight, batches[0], microbatches=2,
                               lr=lr_at, verbose=False, **HYPER)
    for b in batches:
        step(b)
    first = make_model()
    step = ga_opt.compile_step(first, batches[0], microbatches=2, lr=lr_at,
                               verbose=False, **HYPER)
    for b in batches[:2]:
        step(b)
    saved = copy.deepcopy({"model": first.state_dict(),
                           "step": step.state_dict()})
    second = make_model()
    second.load_state_dict(saved["model"])
    resumed = ga_opt.compile_step(second, batches[0], microbatches=2,
                                  lr=lr_at, verbose=False, **HYPER)
    resumed.load_state_dict(saved["step"])
    resumed(batches[2])
    same = all(torch.equal(p, q) for p, q in zip(straight.parameters(),
                                                   second.parameters()))
    report("resume", same and resumed.reused and resumed.step_number == 3,
           f"2 steps, state_dict, a new model and step (from the cache: "
           f"{resumed.reused}) that loads it and takes step "
           f"{resumed.step_number}: bitwise the run of 3 steps: {same}")


def expect_error(name, call, *needles):
    try:
        call()
    except ga_opt.GaOptError as e:
        text = str(e)
        ok = all(n in text for n in needles)
        first = text.splitlines()[0]
        report(name, ok, f"GaOptError: {first[:300]}")
        return e
    report(name, False, "no error")
    return None


def errors(step):
    batch = make_batch(20)
    expect_error("error: missing key",
                 lambda: step({"input_ids": batch["input_ids"],
                               "labels": batch["labels"]}),
                 "missing attention_mask")
    expect_error("error: dtype",
                 lambda: step({**batch, "input_ids":
                               batch["input_ids"].int()}),
                 "batch['input_ids'] is int32", "int64")
    short = make_batch(21, rows=4)
    expect_error("error: new shape refused",
                 lambda: ga_opt.compile_step(
                     make_model(), batch, microbatches=2, verbose=False,
                     on_new_shape="refuse")(short),
                 "batch['input_ids'] has shape (4, 16)", "example's (8, 16)")
    out = step(short)
    report("new shape compiled", len(step._libraries) == 2 and
           bool(torch.isfinite(out["loss"])),
           f"a batch of 4 rows compiled a second library: loss "
           f"{float(out['loss']):.6f}")
    expect_error("error: device",
                 lambda: ga_opt.compile_step(make_model(), batch,
                                             target="cuda"),
                 "the model is on cpu but target is 'cuda'")
    e = expect_error("error: budget",
                     lambda: ga_opt.compile_step(
                         make_model(), batch, microbatches="auto",
                         memory_budget="64KiB", verbose=False, check=False),
                     "memory_budget 65536 bytes fits no plan",
                     "the smallest peak is")
    planned(int(re.search(r"smallest peak is (\d+)", str(e)).group(1)))

    def root_mean(outputs, b):  # the square root of a batch's mean
        losses = F.cross_entropy(outputs.logits.reshape(-1, V),
                                 b["labels"].reshape(-1), reduction="none")
        return torch.sqrt(losses.mean())  # LINE-ROOT-MEAN
    e = expect_error("error: inexact split",
                     lambda: ga_opt.compile_step(
                         make_model(), batch, loss_fn=root_mean,
                         microbatches=2, verbose=False, check=False),
                     "compile_step.py:")
    line = next(i for i, l in enumerate(open(__file__), 1)
                if "LINE-ROOT-MEAN" in l and "next(" not in l)
    report("error: inexact split located",
           e is not None and f"compile_step.py:{line}" in str(e),
           f"the refusal names this file's line {line}: "
           f"{e is not None and e.location}")


def planned(smallest):
    """microbatches='auto' under a budget between the smallest peak and
    the unplanned one: the plan printed once, in step.plan, and the step's
    loss PyTorch's."""
    budget = smallest * 3 // 2
    log = io.StringIO()
    model = make_model()
    batch = make_batch(30)
    step = ga_opt.compile_step(model, batch, microbatches="auto",
                               memory_budget=budget, lr=lr_at, log=log,
                               **HYPER)
    loss = float(step(batch)["loss"])
    ref, _ = torch_loop(make_model(), [batch], torch.float64)
    plan = step.plan or {}
    said = [l for l in log.getvalue().splitlines() if "plan:" in l]
    ok = (plan.get("planned_peak_bytes", budget + 1) <= budget and
          plan.get("microbatches", 0) >= 1 and len(said) == 1 and
          abs(loss - ref[0]) / abs(ref[0]) <= 1e-5)
    report("auto plan", ok,
           f"budget {budget} bytes: {plan.get('microbatches')} "
           f"micro-batch(es), {plan.get('checkpoints')} checkpoint(s), "
           f"planned peak {plan.get('planned_peak_bytes')} bytes; printed "
           f"{len(said)} time(s); loss {loss:.7f} vs PyTorch's {ref[0]:.7f}")


def second_run():
    """The cache gives the step: the import and ga-compile fail if run."""
    def never(*args, **kwargs):
        raise AssertionError("imported or compiled again")
    ga_import.export._lower_to_linalg = never
    ga_opt.compile._compile = never
    log = io.StringIO()
    model = make_model()
    batches = [make_batch(s) for s in range(4)]
    step = ga_opt.compile_step(model, batches[0], microbatches=2, lr=lr_at,
                               log=log, **HYPER)
    losses = [float(step(b)["loss"]) for b in batches]
    ref, _ = torch_loop(make_model(), batches,
                        torch.float64)
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
    said = log.getvalue().strip()
    report("second run: cache", step.reused and "reused the compiled step"
           in said and worst <= 1e-5,
           f"{said.split(' from ')[0]} ...; loss within {worst:.1e} of "
           "PyTorch's float64 loop")


def main():
    sys.stdout.reconfigure(line_buffering=True)  # in order with stderr
    if sys.argv[1:] == ["second"]:
        second_run()
    else:
        step = whole_step()
        gradients()
        resume()
        errors(step)
    print(f"compile_step: {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
