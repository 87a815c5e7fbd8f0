#!/usr/bin/python3
"""The loss table of docs/exact-accumulation.md, generated from the test.

test/Import/models.test runs test/Import/import_models.py with --table,
which writes one JSON row per loss of the zoo: what the loss is, where
trainers went wrong with it, what ga-opt does, and the measured numbers
(the largest relative error of the loss and gradients against PyTorch's
float64 autograd; the k = 2 and 4 micro-batch splits and r = 2 ranks
against the full batch; the naive k = 4 schedule; each trainer's own
formula at k = 4, computed by PyTorch in float64). This script renders
those rows as the markdown table between the document's markers

  <!-- loss-table:begin --> ... <!-- loss-table:end -->

  loss_table.py --write docs/exact-accumulation.md TABLE.json   # update
  loss_table.py --check docs/exact-accumulation.md TABLE.json   # compare

--check exits with status 1 when the document's table is not the one the
rows give: a row added, removed or reworded, a verdict changed (bitwise,
within, refused), or a number more than a factor of 3 from the measured
one (float32 rounding differs a little between builds; a stale table is
off by more).
"""

import argparse
import json
import math
import re
import sys

BEGIN, END = "<!-- loss-table:begin -->", "<!-- loss-table:end -->"
HEADER = ("| loss | where trainers went wrong | ga-opt | loss and gradients "
          "vs float64 | k = 2, 4 | r = 2 (k = 1, 2, 4) | naive k = 4 | the "
          "trainers' formulas at k = 4 |\n|---|---|---|---|---|---|---|---|")
# A number in a cell: 27%, 1.1e-07, 0.01 (and the issue numbers, which
# are text from the rows and compare equal).
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def off_by(value):
    """A relative difference: a percentage from 1%, else a float."""
    if value is None:
        return ""
    if not math.isfinite(value):
        return "NaN (a micro-batch without valid labels)"
    return "off by " + (f"{value * 100:.0f}%" if value >= 0.01
                        else f"{value:.1e}")


def cells(row):
    split = row.get("split")
    if split == "refused":
        split_text = ranks_text = "refused"
    else:
        split_text = ("" if split is None else "bitwise" if split == 0
                      else f"within {split:.1e}")
        ranks = row.get("ranks")
        ranks_text = "" if ranks is None else f"within {ranks:.1e}"
    naive = row.get("naive")
    trainers = "; ".join(f"{label}: {off_by(off)}"
                         for label, off in row.get("trainers", []))
    return [row["loss"], row["issues"], row["ga_opt"],
            f"{row['float64']:.1e}", split_text, ranks_text,
            off_by(naive), trainers]


def render(rows):
    lines = [HEADER]
    for row in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|")
                                       for c in cells(row)) + " |")
    return "\n".join(lines)


def section(text, path):
    """The text between the markers (without them)."""
    if BEGIN not in text or END not in text:
        sys.exit(f"loss_table.py: {path}: no '{BEGIN}' ... '{END}' section")
    start = text.index(BEGIN) + len(BEGIN)
    return start, text.index(END, start)


def close(a, b):
    """Two cells the same but for numbers within a factor of 3."""
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
        x, y = float(x), float(y)
        if x != y and (x == 0 or y == 0 or abs(math.log10(x / y)) >
                       math.log10(3)):
            return False
    return True


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DOC")
    mode.add_argument("--check", metavar="DOC")
    parser.add_argument("rows", help="import_models.py --table's output")
    args = parser.parse_args()
    try:
        rows = json.load(open(args.rows))
    except (OSError, ValueError) as e:
        sys.exit(f"loss_table.py: {args.rows}: {e}")
    path = args.write or args.check
    try:
        text = open(path).read()
    except OSError as e:
        sys.exit(f"loss_table.py: {path}: {e}")
    start, end = section(text, path)
    table = render(rows)
    if args.write:
        with open(path, "w") as f:
            f.write(text[:start] + "\n" + table + "\n" + text[end:])
        print(f"loss_table.py: wrote {len(rows)} rows into {path}")
        return
    have = [line for line in text[start:end].strip().splitlines()]
    want = table.splitlines()
    problems = []
    if len(have) != len(want):
        problems.append(f"{len(have) - 2} rows in the document, "
                        f"{len(want) - 2} measured")
    for i, (h, w) in enumerate(zip(have, want)):
        if not close(h, w):
            problems.append(f"row {i - 1}:\n  document: {h}\n  measured: {w}")
    if problems:
        print(f"loss_table.py: {path}'s loss table is not the measured one "
              f"(update it with --write {path} {args.rows}):")
        print("\n".join(problems))
        sys.exit(1)
    print(f"loss_table.py: {path}'s loss table matches the {len(rows)} "
          "measured rows")


if __name__ == "__main__":
    main()
