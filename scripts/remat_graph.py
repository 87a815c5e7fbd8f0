#!/usr/bin/python3
"""Writes a U-Net-like graph for ga-remat: a chain of N nodes in which node
i > N/2 also reads node N-1-i (a skip connection), costs 1, 2, 3 in turn,
outputs of 100 and 150 bytes in turn, an input of 100 bytes (the graph of
test/unit/RematTest.cpp's GreedyOnLargeGraphs).

Usage: python3 scripts/remat_graph.py N > graph.json
"""

import json
import sys


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit("usage: remat_graph.py N (N >= 1 nodes)")
    n = int(sys.argv[1])
    nodes = []
    for i in range(n):
        node = {"name": f"n{i}", "cost": 1 + i % 3, "bytes": 100 + 50 * (i % 2)}
        inputs = [f"n{i - 1}"] if i else []
        if i > n // 2 and n - 1 - i < i - 1:
            inputs.append(f"n{n - 1 - i}")
        if inputs:
            node["inputs"] = inputs
        nodes.append(node)
    json.dump({"nodes": nodes, "input_bytes": 100}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
