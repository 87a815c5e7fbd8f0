"""Each kernel's measured time against the bytes the kernel report counts.

    python3 scripts/ga_scripts/kernel_bandwidth.py REPORT.json PROFILE.txt \
        [--bandwidth-gbs 4300]

REPORT.json is ga-compile's `--kernel-report=FILE.json` of a step library;
PROFILE.txt is what a run of that library printed with GA_CUDA_PROFILE=all
(its `ga-cuda-profile:` lines, one per kernel and launch shape, labelled
`NAME (module #N) grid X block Y`; other lines are ignored). A kernel's
profile row and its report row meet by the device module's index (the
order the runtime loads them in), the grid and the block. For each kernel
the table gives its launches per step in both (they must agree), its
time, the bytes it reads and writes, the bandwidth it reaches
((read + written) x launches / time) and that as a share of the device's,
and its time over the report's bound. The last lines sum the kernels and
the products (cuBLAS calls, with the runtime's own kernels) of the
profile. Exits 1 where a profiled
kernel has no report row or the launches differ.
"""

import argparse
import json
import re
import sys

LINE = re.compile(r"^ga-cuda-profile:\s+([0-9.]+)\s+([0-9.]+)%\s+([0-9.]+)\s+"
                  r"(.*\S)\s*$")
KERNEL = re.compile(r"^(.*) \(module #(-?\d+)\) grid (\d+)x(\d+)x(\d+) "
                    r"block (\d+)x(\d+)x(\d+)$")


def parse_profile(text):
    """The profile's rows: (label, ms per step, calls per step)."""
    rows = []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            rows.append((m.group(4), float(m.group(1)), float(m.group(3))))
    return rows


def join(report, profile, bandwidth):
    """Rows of (kernel, report launches, profile calls, ms, bytes, GB/s,
    share of `bandwidth` (bytes/s), time over bound) for the profile's
    kernels, the products' (ms, calls), and the labels without a report
    row."""
    by_key = {}
    for k in report["kernels"]:
        key = (k["module_index"], tuple(k["grid"]), tuple(k["block"]))
        row = by_key.setdefault(key, {"kernel": k["kernel"], "launches": 0,
                                      "bytes": 0, "bound_us": 0.0})
        row["launches"] += k["launches"]
        row["bytes"] += k["launches"] * (k["read_bytes"] + k["written_bytes"])
        # The bound at `bandwidth`: the larger of the bytes' time there
        # and the FLOPs' at the report's float32 peak.
        moved = k["read_bytes"] + k["written_bytes"]
        row["bound_us"] += k["launches"] * 1e6 * max(
            moved / bandwidth, k["flops"] / report["device"]["f32_flops"])
    joined, missing = [], []
    products_ms = products_calls = 0.0
    for label, ms, calls in profile:
        m = KERNEL.match(label)
        if not m:
            # cuBLAS's calls and the runtime's own kernels (the pointer
            # arrays of two-level batches, gpu-bf16's rounding).
            products_ms += ms
            products_calls += calls
            continue
        key = (int(m.group(2)), tuple(int(g) for g in m.group(3, 4, 5)),
               tuple(int(g) for g in m.group(6, 7, 8)))
        row = by_key.get(key)
        if row is None:
            missing.append(label)
            continue
        seconds = ms / 1e3
        rate = row["bytes"] / seconds if seconds > 0 else None
        joined.append({
            "kernel": row["kernel"], "launches": row["launches"],
            "calls": calls, "ms": ms, "bytes": row["bytes"],
            "gbs": rate / 1e9 if rate else None,
            "share": rate / bandwidth if rate else None,
            "over_bound": (ms * 1e3 / row["bound_us"]
                           if row["bound_us"] > 0 else None)})
    return joined, (products_ms, products_calls), missing


def table(joined, products, missing, bandwidth):
    def num(v, fmt):
        return "-" if v is None else format(v, fmt)
    lines = [f"Kernels against the kernel report at "
             f"{bandwidth / 1e9:.0f} GB/s:", "",
             "| kernel | launches (report) | calls (profile) | ms/step | "
             "bytes/step | GB/s | of bandwidth | time / bound |",
             "|---|---|---|---|---|---|---|---|"]
    for r in sorted(joined, key=lambda r: -r["ms"]):
        lines.append(
            f"| {r['kernel']} | {r['launches']} | {r['calls']:.1f} | "
            f"{r['ms']:.3f} | {r['bytes']} | {num(r['gbs'], '.0f')} | "
            f"{num(r['share'], '.1%')} | "
            f"{num(r['over_bound'], '.2f')} |")
    kernels_ms = sum(r["ms"] for r in joined)
    step_ms = kernels_ms + products[0]
    fast = sum(r["ms"] for r in joined
               if r["share"] is not None and r["share"] >= 0.6)
    lines += ["",
              f"kernels: {len(joined)} rows joined, {len(missing)} without a "
              f"report row; {kernels_ms:.3f} ms per step "
              f"({100 * kernels_ms / step_ms if step_ms else 0:.1f}% of the "
              f"profiled {step_ms:.3f} ms), {fast:.3f} ms of it in kernels at "
              f"60% of the bandwidth or more",
              f"products and the runtime's kernels: {products[1]:.1f} calls, "
              f"{products[0]:.3f} ms per step"]
    lines += [f"no report row: {label}" for label in missing]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report")
    parser.add_argument("profile")
    parser.add_argument("--bandwidth-gbs", type=float, default=0,
                        help="the device's bandwidth (default: the "
                             "report's)")
    args = parser.parse_args()
    report = json.load(open(args.report))
    bandwidth = (args.bandwidth_gbs * 1e9 if args.bandwidth_gbs > 0 else
                 report["device"]["bandwidth_bytes_per_s"])
    joined, products, missing = join(
        report, parse_profile(open(args.profile).read()), bandwidth)
    sys.stdout.write(table(joined, products, missing, bandwidth))
    bad = [r for r in joined if abs(r["calls"] - r["launches"]) > 1e-6]
    for r in bad:
        print(f"launches differ: {r['kernel']}: report {r['launches']}, "
              f"profile {r['calls']}")
    return 1 if missing or bad else 0


if __name__ == "__main__":
    sys.exit(main())
