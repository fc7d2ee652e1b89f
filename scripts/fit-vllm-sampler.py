#!/usr/bin/env python3
"""Fit vLLM's sampler bytes per logit (plan/runtime/vllm.rs SAMPLER_BYTES_PER_LOGIT).

Reads crates/ai-hwaccel/tests/calibration/runtime_memory.csv: every vLLM row
that logged a peak activation on a GPU where vLLM's defaults are 1024
sequences (70 GiB or more, not an A100). Least squares through the origin of
peak_bytes = B x max_num_seqs x vocab_size. Prints B and each row's error.
Stdlib only."""
import csv
import os
import sys

GIB = 1 << 30
here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(here, "..", "crates", "ai-hwaccel", "tests", "calibration", "runtime_memory.csv")
rows = []
with open(path, newline="") as f:
    lines = [l for l in f if not l.startswith("#")]
for r in csv.DictReader(lines):
    if r["runtime"] != "vllm" or not r["peak_activation_gib"]:
        continue
    seqs = 1024 if float(r["gpu_total_gib"]) >= 70 and "a100" not in r["gpu"].lower() else 256
    rows.append((r["model"], seqs * int(r["vocab_size"]), float(r["peak_activation_gib"]) * GIB))
if not rows:
    sys.exit("no vLLM rows with a peak activation")
b = sum(x * y for _, x, y in rows) / sum(x * x for _, x, _ in rows)
print(f"SAMPLER_BYTES_PER_LOGIT = {b:.2f}  ({len(rows)} rows)")
for model, x, y in rows:
    print(f"  {model:50s} logged {y / GIB:6.2f} GiB  fit {b * x / GIB:6.2f} GiB  {100 * (b * x - y) / y:+.1f} %")
