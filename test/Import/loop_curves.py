"""The output of examples/pytorch_loop.py: at every step the loss of
ga-opt's step (4 micro-batches) within 1e-4 relative of PyTorch's on the
full batch; PyTorch's usual 4-way accumulation (the mean of the means) at
least 10x farther from it than ga-opt's; and ga-opt's loss of the last 3
steps at least 0.05 below that of the first 3."""
import re
import sys

text = open(sys.argv[1]).read()
rows = [tuple(map(float, r)) for r in re.findall(
    r"^\s*\d+\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$", text, re.M)]
worst = max(abs(a - b) / abs(b) for a, b, _ in rows)
agree = worst <= 1e-4
print(f"loop: {len(rows)} steps, the losses agree within {worst:.2e}: "
      + ("ok" if agree else "FAIL"))
ours = max(abs(a - b) for a, b, _ in rows)
naive = max(abs(c - b) for _, b, c in rows)
apart = naive >= 10 * ours
print(f"loop: the naive accumulation is {naive:.1e} from the full batch, "
      f"ga-opt {ours:.1e}: " + ("ok" if apart else "FAIL"))
losses = [a for a, _, _ in rows]
first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
falls = last <= first - 0.05
print(f"loop: the loss falls from {first:.4f} to {last:.4f}: "
      + ("ok" if falls else "FAIL"))
sys.exit(0 if agree and apart and falls and len(rows) >= 6 else 1)
