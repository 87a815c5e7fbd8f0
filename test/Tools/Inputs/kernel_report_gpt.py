"""Checks ga-gpu-kernel-report's JSON for the generator's GPT
(examples/gen_tiny_gpt.py) against counts made by hand from the model's
sizes, and prints what the report says of its kernels.

    kernel_report_gpt.py REPORT.json B S V D H FFN L [--fused]

- The products' FLOPs: every linear layer's product, forward (2 m n k) and
  backward (the input's and the weight's gradients, 4 m n k), over the B S
  tokens (the LM head over the B (S - 1) positions that predict a label),
  and the attention's four products per layer (scores and output, forward
  and backward: 12 B H S^2 Dh FLOPs with the causal half computed).
- The causal mask's kernel on the [B, H, S, S] scores: it reads the scores
  (B H S^2 float32) and writes the masked scores once.
It also prints the kernels' widest loads, the loads issued against the
bytes read, and the kernels' share of the step's floor.

With --fused (attention=library, precision=bf16-mixed): the attention is
one call of the fused attention forward and one backward per layer: the
GEMMs' FLOPs are the linear layers' alone, the calls' FLOPs 4 B H S^2 Dh
forward and 10 B H S^2 Dh backward (the scores again, and the gradients
of the output, the scores and the three operands), halved by the causal
mask, and their bytes each bfloat16 operand and result once (lse
float32); no kernel touches a [B, H, S, S] buffer.
"""

import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    B, S, V, D, H, F, L = (int(v) for v in sys.argv[2:9])
    dh = D // H
    linear = D * 3 * D + D * D + D * F + F * D  # MACs per token per layer
    fused = "--fused" in sys.argv[9:]
    flops = 6 * (linear * L * B * S + D * V * B * (S - 1))
    if not fused:
        flops += L * 12 * B * H * S * S * dh
    calls = [p for p in report["products"]
             if p["call"].startswith("ga_cuda_attention_")]
    products = sum(p["calls"] * p["flops"] for p in report["products"]
                   if p not in calls)
    ok = True
    if fused:
        tensor = B * S * H * dh * 2
        for p in sorted(calls, key=lambda p: p["call"]):
            backward = "bwd" in p["call"]
            want = L * (10 if backward else 4) * B * H * S * S * dh // 2
            got = p["calls"] * p["flops"]
            # Forward: q, k, v; backward: q, k, v, out, dout and lse.
            read = (5 * tensor + B * H * S * 4) if backward else 3 * tensor
            written = 3 * tensor if backward else tensor + B * H * S * 4
            same = got == want and (p["read_bytes"], p["written_bytes"]) == (
                read, written)
            ok = ok and same
            print(f"{p['call']}: {p['calls']} calls, FLOPs {got}, by hand "
                  f"{want}; bytes read {p['read_bytes']}, written "
                  f"{p['written_bytes']}: "
                  f"{'equal' if same else 'DIFFERENT'}")
        ok = ok and len(calls) == 2
    print(f"product FLOPs: report {products}, by hand {flops}: "
          f"{'equal' if products == flops else 'DIFFERENT'}")
    scores = B * H * S * S * 4
    mask = [k for k in report["kernels"]
            if k["read_bytes"] == scores and k["written_bytes"] == scores]
    print(f"kernels reading 1 and writing 1 [B, H, S, S] float32 buffer: "
          f"{sum(k['launches'] for k in mask)} launches")
    widths = {}
    for k in report["kernels"]:
        widths[k["load_bytes"][1]] = widths.get(k["load_bytes"][1], 0) + 1
    print("kernels by their widest load: " + ", ".join(
        f"{count} at {width} B" for width, count in sorted(widths.items())))
    issued = sum(k["launches"] * k["issued_load_bytes"]
                 for k in report["kernels"])
    read = report["totals"]["read_bytes"]
    print(f"loads issued {issued / read:.2f}x the bytes read")
    t = report["totals"]
    floor = t["kernel_bound_us"] + t["product_bound_us"]
    print(f"kernels {100 * t['kernel_bound_us'] / floor:.1f}% of the step's "
          f"floor on {report['device']['name']}")
    return 0 if products == flops and ok else 1


if __name__ == "__main__":
    sys.exit(main())
