"""Two ga-train logs (CSV) of the same run under two schedules: every
step's loss and gradient norm must be the same bits (the log prints 10
significant digits, which tell float32 values apart), and the loss of the
last 5 steps must average at least 0.5 below that of the first 5."""
import csv
import sys


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


a, b = rows(sys.argv[1]), rows(sys.argv[2])
same = sum(x["loss"] == y["loss"] and x["grad_norm"] == y["grad_norm"]
           for x, y in zip(a, b))
print(f"curves: the same bits in {same} of {len(a)} steps"
      + ("" if len(a) == len(b) else f" (lengths {len(a)}, {len(b)})"))
loss = [float(r["loss"]) for r in a]
first, last = sum(loss[:5]) / 5, sum(loss[-5:]) / 5
print(f"curves: the loss falls from {first:.4f} to {last:.4f}: "
      + ("ok" if last <= first - 0.5 else "FAIL"))
sys.exit(0 if same == len(a) == len(b) and last <= first - 0.5 else 1)
