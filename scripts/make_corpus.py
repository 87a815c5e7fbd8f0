#!/usr/bin/python3
"""Turns a text corpus from a Debian package into a ga-train dataset.

The corpus: the `fortunes` package's collection (/usr/share/games/fortunes,
installed by scripts/setup.sh), about 15,000 records of very different
lengths (a tenth under 42 bytes, a tenth over 360) separated by lines that
hold a single `%`. Nothing is downloaded.

Every record becomes one sequence of bytes (vocabulary 256), truncated or
padded to --seq-len S: real, ragged padding. Written to --out DIR:

  tokens.npy    int64 [N, S]  the bytes, 0 (NUL, absent from the text) at
                              padding
  labels.npy    int64 [N, S]  the bytes, -100 at padding (the loss ignores
                              them)
  attention_mask.npy
                int64 [N, S]  with --attention-mask: 1 at the bytes, 0 at
                              padding (the inputs of transformers' models)
  dataset.json  {"arrays": ["tokens.npy", "labels.npy"], ...}: what ga-train
                reads, with the vocabulary, S, the row count and the share
                of padding

The records are shuffled with --seed (default 0), so that consecutive
global batches mix the collection's files; the same arguments write the
same files.

  python3 scripts/make_corpus.py --out data/fortunes --seq-len 64
"""

import argparse
import json
import os
import sys

import numpy as np

DEFAULT_SOURCE = "/usr/share/games/fortunes"
PAD_TOKEN = 0
IGNORE_INDEX = -100


def read_records(source):
    """The records of every fortune file under `source` (not the .dat
    indexes, the .u8 links or the offensive subdirectory), in file order."""
    if not os.path.isdir(source):
        sys.exit(f"make_corpus.py: '{source}' is not a directory; install "
                 "Debian's `fortunes` package (scripts/setup.sh does) or pass "
                 "--source")
    records = []
    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if (name.endswith((".dat", ".u8")) or os.path.islink(path)
                or not os.path.isfile(path)):
            continue
        with open(path, "rb") as f:
            text = f.read()
        for record in text.split(b"\n%\n"):
            record = record.strip(b"\n")
            if len(record) >= 2 and PAD_TOKEN not in record:
                records.append(record)
    if not records:
        sys.exit(f"make_corpus.py: no records in '{source}'")
    return records


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--seq-len", type=int, default=64,
                        help="S: bytes per sequence (default 64)")
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help=f"fortune files (default {DEFAULT_SOURCE})")
    parser.add_argument("--rows", type=int, default=0,
                        help="keep the first N shuffled records (default: "
                             "all)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the shuffle (default 0)")
    parser.add_argument("--attention-mask", action="store_true",
                        help="also write attention_mask.npy, listed between "
                             "the tokens and the labels (the batch operands "
                             "of a model that ga-import made from "
                             "input_ids, attention_mask and labels)")
    args = parser.parse_args()
    if args.seq_len < 2:
        parser.error(f"--seq-len must be at least 2, got {args.seq_len}")
    if args.rows < 0:
        parser.error(f"--rows must be at least 0, got {args.rows}")

    records = read_records(args.source)
    order = np.random.default_rng(args.seed).permutation(len(records))
    if args.rows:
        order = order[:args.rows]
    s = args.seq_len
    tokens = np.full((len(order), s), PAD_TOKEN, np.int64)
    labels = np.full((len(order), s), IGNORE_INDEX, np.int64)
    for row, index in enumerate(order):
        data = np.frombuffer(records[index][:s], np.uint8).astype(np.int64)
        tokens[row, :len(data)] = data
        labels[row, :len(data)] = data

    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "tokens.npy"), tokens)
    np.save(os.path.join(args.out, "labels.npy"), labels)
    arrays = ["tokens.npy", "labels.npy"]
    if args.attention_mask:
        np.save(os.path.join(args.out, "attention_mask.npy"),
                (labels != IGNORE_INDEX).astype(np.int64))
        arrays.insert(1, "attention_mask.npy")
    padding = float((labels == IGNORE_INDEX).mean())
    meta = {
        "arrays": arrays,
        "vocab": 256,
        "seq_len": s,
        "rows": int(len(order)),
        "pad_token": PAD_TOKEN,
        "ignore_index": IGNORE_INDEX,
        "padding_fraction": round(padding, 4),
        "source": args.source,
        "seed": args.seed,
    }
    with open(os.path.join(args.out, "dataset.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"make_corpus.py: {len(order)} sequences of {s} bytes from "
          f"{args.source} ({padding:.1%} padding) -> {args.out}")


if __name__ == "__main__":
    main()
