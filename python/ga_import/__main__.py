"""ga-import's command: python -m ga_import FILE.py:FUNCTION [-o OUT.mlir]

FUNCTION() (no arguments) returns (model, batch): a torch.nn.Module and a
dict of example tensors with the labels under 'labels' (--labels-key). The
step is written to OUT.mlir (stdout without -o), the example's arguments as
OUT.argN.npy beside it with --save-arguments, the model's parameters as
DIR/paramN.npy with --save-init DIR (for ga-train --init DIR), and the
parameter names, in argument order, to stderr. --train writes a whole
training step for ga-train (gradients clipped to --clip, AdamW).

Before the step is written it is checked against PyTorch: run by ga-run
(beside --ga-opt, or --ga-run) on the example batch, its loss and every
gradient must be PyTorch's float64 autograd's within --check-tolerance
(default 1e-5), else nothing is written and the worst parameter is named.
--no-check skips the check.
"""

import argparse
import importlib.util
import os
import shutil
import sys

import ga_import


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="ga-import", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="FILE.py:FUNCTION")
    parser.add_argument("-o", "--output", default="-")
    parser.add_argument("--ga-opt", default=shutil.which("ga-opt") or
                        "ga-opt")
    parser.add_argument("--labels-key", default="labels")
    parser.add_argument("--ignore-index", type=int, default=-100)
    parser.add_argument("--reduction", default="mean",
                        choices=["mean", "sum"])
    parser.add_argument("--microbatches", type=int, default=1)
    parser.add_argument("--data-parallel", type=int, default=1)
    parser.add_argument("--save-arguments", action="store_true")
    parser.add_argument("--train", action="store_true",
                        help="a whole training step for ga-train (clipping "
                        "and AdamW)")
    parser.add_argument("--clip", type=float, default=1.0,
                        help="with --train: the global norm the gradients "
                        "are clipped to (default 1)")
    parser.add_argument("--shift-labels", action="store_true",
                        help="causal LM: the logits of positions 0..S-2 "
                        "against the labels of 1..S-1")
    parser.add_argument("--save-init", metavar="DIR",
                        help="the model's parameters as DIR/param<i>.npy, "
                        "for ga-train --init DIR")
    parser.add_argument("--no-check", action="store_true",
                        help="do not check the step against PyTorch's "
                        "float64 autograd on the example batch")
    parser.add_argument("--check-tolerance", type=float, default=1e-5,
                        help="the check's bound on the relative error of "
                        "the loss and of every gradient (default 1e-5)")
    parser.add_argument("--ga-run", default=None,
                        help="the ga-run that runs the check (default: "
                        "beside --ga-opt)")
    parser.add_argument("--dropout", default="refuse",
                        choices=["refuse", "off"],
                        help="a model in training mode with dropout: "
                        "refused (default), or imported without it")
    args = parser.parse_args(argv)

    path, sep, func = args.model.rpartition(":")
    if not sep or not path.endswith(".py"):
        parser.error(f"model: expected FILE.py:FUNCTION, got '{args.model}'")
    if not os.path.isfile(path):
        parser.error(f"model: '{path}' does not exist")
    spec = importlib.util.spec_from_file_location("ga_import_model", path)
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    if not hasattr(source, func):
        parser.error(f"model: '{path}' has no function '{func}'")
    made = getattr(source, func)()
    if not (isinstance(made, tuple) and len(made) == 2):
        parser.error(f"model: {func}() must return (model, batch), got "
                     f"{type(made).__name__}")
    model, batch = made
    try:
        step = ga_import.import_step(
            model, batch, ga_opt=args.ga_opt, labels_key=args.labels_key,
            ignore_index=args.ignore_index, reduction=args.reduction,
            microbatches=args.microbatches,
            data_parallel=args.data_parallel, train=args.train,
            clip=args.clip, shift_labels=args.shift_labels,
            check=not args.no_check, check_tolerance=args.check_tolerance,
            ga_run=args.ga_run,
            dropout=args.dropout)
    except ga_import.ImportError_ as e:
        sys.exit(f"ga-import: error: {e}")
    if args.output == "-":
        sys.stdout.write(step.mlir)
    else:
        with open(args.output, "w") as f:
            f.write(step.mlir)
        if args.save_arguments:
            import numpy as np
            stem = os.path.splitext(args.output)[0]
            for i, t in enumerate(step.arguments()):
                np.save(f"{stem}.arg{i}.npy", t.detach().numpy())
    if args.save_init:
        import numpy as np
        os.makedirs(args.save_init, exist_ok=True)
        for i, p in enumerate(step.params):
            np.save(os.path.join(args.save_init, f"param{i}.npy"),
                    p.detach().numpy())
    for i, name in enumerate(step.param_names):
        print(f"ga-import: parameter #{i}: {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
