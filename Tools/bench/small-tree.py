#!/usr/bin/env python3
"""Writes the small-file tree the local sync benchmarks use: COUNT files of 100 to 3,999
bytes (random bytes, the same for every file), 1,000 to a folder d0000, d0001, ...

    small-tree.py ROOT COUNT
"""
import os
import sys

root, count = sys.argv[1], int(sys.argv[2])
payload = os.urandom(4096)
for i in range(count):
    folder = os.path.join(root, f"d{i // 1000:04d}")
    if i % 1000 == 0:
        os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"f{i}.txt"), "wb") as f:
        f.write(payload[: 100 + (i * 37) % 3900])
