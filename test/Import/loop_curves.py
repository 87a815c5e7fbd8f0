"""The output of examples/pytorch_loop.py: every step's ga-opt and PyTorch
losses within 1e-4 relative, and the ga-opt loss of the last 3 steps at
least 0.05 below that of the first 3."""
import re
import sys

pairs = [(float(a), float(b)) for a, b in re.findall(
    r"loss ([0-9.]+) \(ga-opt\)\s+([0-9.]+) \(PyTorch\)", open(sys.argv[1]).read())]
worst = max(abs(a - b) / abs(b) for a, b in pairs)
agree = worst <= 1e-4
print(f"loop: {len(pairs)} steps, the losses agree within {worst:.2e}: "
      + ("ok" if agree else "FAIL"))
ours = [a for a, _ in pairs]
first, last = sum(ours[:3]) / 3, sum(ours[-3:]) / 3
falls = last <= first - 0.05
print(f"loop: the loss falls from {first:.4f} to {last:.4f}: "
      + ("ok" if falls else "FAIL"))
sys.exit(0 if agree and falls and len(pairs) >= 6 else 1)
