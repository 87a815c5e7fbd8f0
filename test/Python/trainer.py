"""ga_opt.integrations.transformers.GaOptTrainer against the Hugging Face
Trainer, from the same weights on the same padded rows.

Three runs of 3 optimizer steps each (AdamW, lr 1e-3 constant, clipping at
1.0), for two losses:
  full:    Trainer, 8 rows per step, no accumulation (the reference);
  trainer: Trainer, 2 rows x 4 accumulation steps;
  ga-opt:  GaOptTrainer, 2 rows x 4 accumulation steps (one compiled step
           over the 8 rows, k = 4 exact micro-batches).

- The model's own causal-LM loss, which the Trainer accumulates right
  (num_items_in_batch): the three runs' logged losses agree within 1e-5
  relative and their parameters within float32 rounding.
- A token-mean loss of the user's (`compute_loss_func` that ignores
  num_items_in_batch, as most written before transformers 4.46 do):
  ga-opt's run equals the full batch's (loss within 1e-5, parameters
  within float32 rounding), the Trainer's accumulation does not (its
  gradients are the sum of 4 micro-batch means: its parameters are off by
  far more).
"""

import copy
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_VERBOSITY"] = "error"
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer,  # noqa: E402
                          TrainingArguments, default_data_collator)

from ga_opt.integrations.transformers import GaOptTrainer  # noqa: E402

FAILED = []
S, V, ROWS = 16, 64, 24


def report(name, ok, detail):
    print(f"{'PASS' if ok else 'FAIL'}: {name}: {detail}")
    if not ok:
        FAILED.append(name)


def dataset():
    """ROWS rows of S tokens, padded at the end to different lengths."""
    gen = torch.Generator().manual_seed(0)
    rows = []
    for i in range(ROWS):
        ids = torch.randint(1, V, (S,), generator=gen)
        length = S - (i * 5) % 11
        mask = (torch.arange(S) < length).long()
        labels = torch.where(mask.bool(), ids, torch.tensor(-100))
        rows.append({"input_ids": ids, "attention_mask": mask,
                     "labels": labels})
    return rows


def token_mean(outputs, labels, num_items_in_batch=None):
    """A user's loss: the mean over the valid labels of whatever batch it
    is given (num_items_in_batch ignored)."""
    logits = outputs.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, V), labels[:, 1:].reshape(-1),
                           ignore_index=-100)


def train(kind, model, rows, loss):
    cls = GaOptTrainer if kind == "ga-opt" else Trainer
    per_device, steps = (8, 1) if kind == "full" else (2, 4)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out, per_device_train_batch_size=per_device,
            gradient_accumulation_steps=steps, max_steps=3,
            learning_rate=1e-3, lr_scheduler_type="constant",
            warmup_steps=0, max_grad_norm=1.0, logging_steps=1, seed=0,
            use_cpu=True, report_to=[], save_strategy="no",
            disable_tqdm=True)
        extra = {"ga_opt_options": {"verbose": False}} \
            if kind == "ga-opt" else {}
        trainer = cls(model=model, args=args, train_dataset=rows,
                      data_collator=default_data_collator,
                      compute_loss_func=token_mean if loss == "token mean"
                      else None, **extra)
        trainer.train()
    logged = [h for h in trainer.state.log_history if "loss" in h]
    return ([h["loss"] for h in logged],
            [h.get("grad_norm") for h in logged], model)


def largest(a, b):
    return max(float((p.detach() - q.detach()).abs().max())
               for p, q in zip(a.parameters(), b.parameters()))


def compare(name, run, reference, bound=1e-5):
    """Whether `run` equals `reference`: loss and parameters."""
    losses, _, model = run
    ref_losses, _, ref_model = reference
    rel = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    diff = largest(model, ref_model)
    print(f"{name}: losses " + " ".join(f"{l:.6f}" for l in losses)
          + " (reference " + " ".join(f"{l:.6f}" for l in ref_losses)
          + f"); parameters off by {diff:.1e}")
    return rel, diff


def main():
    sys.stdout.reconfigure(line_buffering=True)  # in order with stderr
    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(
        vocab_size=V, n_positions=S, n_embd=32, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        attn_implementation="eager", bos_token_id=0, eos_token_id=0))
    rows = dataset()

    def run(kind, loss):
        return train(kind, copy.deepcopy(base), rows, loss)
    # The reference: the whole batch of 8 rows in one step, the mean over
    # its valid (shifted) labels: no accumulation to get wrong.
    reference = run("full", "token mean")
    for loss in ("causal LM", "token mean"):
        rel, diff = compare(f"{loss}: ga-opt", run("ga-opt", loss),
                            reference)
        report(f"{loss}: ga-opt equals the full batch",
               rel <= 1e-5 and diff <= 1e-5,
               f"2 rows x 4 accumulation steps: loss within {rel:.1e} of the "
               f"full batch's (bound 1e-5), parameters within {diff:.1e} "
               "(bound 1e-5)")
    t_rel, t_diff = compare("token mean: Trainer", run("trainer",
                                                       "token mean"),
                            reference)
    report("token mean: the Trainer's accumulation does not",
           t_diff > 100 * max(diff, 1e-8),
           f"its parameters off by {t_diff:.1e}, ga-opt's by {diff:.1e}; "
           f"its logged loss off by {t_rel:.0%}")
    # The model's own loss under the Trainer: its accumulation agrees with
    # its full batch (num_items_in_batch) ...
    full = run("full", "causal LM")
    a_rel, a_diff = compare("causal LM: Trainer", run("trainer",
                                                      "causal LM"), full)
    report("causal LM: the Trainer's accumulation equals its full batch",
           a_rel <= 1e-5 and a_diff <= 1e-5,
           f"loss within {a_rel:.1e}, parameters within {a_diff:.1e}")
    # ... but both divide the sum by the count of the labels before the
    # shift (GPT-2's loss_type is None, so the Trainer does not know that
    # the loss shifts): a smaller loss than the model's own.
    f_rel, _ = compare("causal LM: Trainer, full batch", full, reference)
    print(f"note: the Trainer's causal-LM loss for GPT-2 is off the "
          f"model's own mean by up to {f_rel:.1%} (its count includes "
          "each row's first label)")
    print(f"trainer: {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
