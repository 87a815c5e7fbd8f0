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
