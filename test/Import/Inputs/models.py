"""Models for ga-import's command-line tests: FUNCTION() -> (model, batch)."""
import torch


def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 5))
    labels = torch.tensor([[0, 1, -100], [4, -100, 2]])
    return model, {"input": torch.randn(2, 3, 8), "labels": labels}


def no_labels():
    model, batch = mlp()
    del batch["labels"]
    return model, batch


def float_labels():
    model, batch = mlp()
    batch["labels"] = batch["labels"].float()
    return model, batch


def not_a_pair():
    return mlp()[0]


def list_labels():
    model, batch = mlp()
    batch["labels"] = batch["labels"].tolist()
    return model, batch


def gpt2_bytes():
    """transformers' GPT2LMHeadModel over bytes (vocabulary 256), sequences
    of 32: the corpus of scripts/make_corpus.py --seq-len 32
    --attention-mask, 16 rows a step. In eval mode: its dropout (p = 0.1
    by default) would draw random numbers, which ga-import refuses."""
    import os
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=256, n_positions=32, n_embd=64, n_layer=2,
                        n_head=4, attn_implementation="eager",
                        bos_token_id=0, eos_token_id=0)
    batch = {"input_ids": torch.zeros(16, 32, dtype=torch.int64),
             "attention_mask": torch.ones(16, 32, dtype=torch.int64),
             "labels": torch.zeros(16, 32, dtype=torch.int64)}
    return GPT2LMHeadModel(config).eval(), batch


class Cumsum(torch.nn.Module):
    """torch.cumsum, which torch-mlir lowers to tm_tensor.scan: ga-import
    writes it as a masked sum."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, input):
        return self.fc(torch.cumsum(input, dim=1))


def cumsum():
    model, batch = mlp()
    return Cumsum(), batch


class Sort(torch.nn.Module):
    """torch.sort, which torch-mlir lowers to tm_tensor.sort."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, input):
        return self.fc(torch.sort(input, dim=1).values)


def sort():
    model, batch = mlp()
    return Sort(), batch


def dropout():
    """An MLP with dropout, in training mode: exported in eval mode."""
    model, batch = mlp()
    model = torch.nn.Sequential(model[0], torch.nn.Dropout(0.5), model[1],
                                model[2]).train()
    return model, batch


def import_with_loss(loss_fn, **options):
    """ga_import.import_step of mlp() with `loss_fn` and `options` (ga-opt
    from $GA_OPT): the error's text, or 'imported'."""
    import os
    import ga_import
    model, batch = mlp()
    try:
        ga_import.import_step(model, batch, ga_opt=os.environ["GA_OPT"],
                              loss_fn=loss_fn, **options)
    except ga_import.ImportError_ as e:
        return f"ga-import: error: {e}"
    return "imported"
