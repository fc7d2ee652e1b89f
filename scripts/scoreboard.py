#!/usr/bin/env python3
"""Regenerate crates/ai-hwaccel/tests/calibration/scoreboard.csv from its source.

The source is smoothyy3/willitrun's machine-parsed copy of llama.cpp's three
scoreboards (CUDA discussion #15013, ROCm #15021, Vulkan #10879), pinned to
commit 04cac646 and kept byte-for-byte in
crates/ai-hwaccel/tests/fixtures/scoreboards/ (tests/fixtures/SOURCES.md).
Every pp512 / tg128 value is that file's, as its JSON holds it; this script
only regroups the records (one CSV row per backend, flash-attention setting,
GPU and commit) and names each GPU's spec entry (SPEC below) or says why none
is named (WHY). Apple's records (#4167) are not used: the parse mixes GPU
core-count variants.

    python3 scripts/scoreboard.py            # rewrite scoreboard.csv
    python3 scripts/scoreboard.py --check    # exit 1 if it would change

`scripts/test.sh` runs `--check`, so the committed CSV is always what this
script makes of the pinned source. When a spec entry is added for a GPU the
scoreboards print, map it in SPEC and rerun; the accuracy test
(`scoreboard_rows_against_published_measurements`) then plans those rows.
"""

import csv
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_FILE = ROOT / "crates/ai-hwaccel/tests/fixtures/scoreboards/willitrun__llama_cpp_cuda__04cac646.jsonl"
OUT_FILE = ROOT / "crates/ai-hwaccel/tests/calibration/scoreboard.csv"
SRC = ("https://github.com/smoothyy3/willitrun/blob/04cac64616108bedd06a710b91bdc1b4f4758ce9/"
       "data/normalized/llama_cpp_cuda.jsonl")
DISC = {"CUDA": "15013", "Vulkan": "10879", "ROCm": "15021"}

# The GPU as the scoreboard names it (the parse's `chip`) -> spec id. Only
# names that identify one part: a name that covers parts with different
# bandwidth or rates is in WHY instead.
SPEC = {
    "RTX 5090": "rtx-5090", "RTX 5080": "rtx-5080", "RTX 5070 Ti": "rtx-5070-ti",
    "RTX 6000 Ada": "rtx-6000-ada", "RTX 3090 Ti": "rtx-3090-ti", "L40": "l40",
    "RTX 4080 SUPER": "rtx-4080-super", "RTX 4080": "rtx-4080", "RTX A6000": "rtx-a6000",
    "RTX 4070 Ti SUPER": "rtx-4070-ti-super", "RTX A5000": "rtx-a5000", "RTX 5070": "rtx-5070",
    "A40": "a40", "A30": "a30", "Titan V": "titan-v", "RTX 2080 Ti": "rtx-2080-ti",
    "RTX A4500": "rtx-a4500", "RTX 2070 SUPER": "rtx-2070-super", "RTX A4000": "rtx-a4000",
    "RTX 2060 SUPER": "rtx-2060-super", "Tesla T4": "t4", "GTX 1660": "gtx-1660",
    "GTX 1070 Ti": "gtx-1070-ti", "Nvidia RTX 4070 Ti": "rtx-4070-ti",
    "Nvidia RTX 4070 Super": "rtx-4070-super", "Nvidia RTX 4070": "rtx-4070",
    "AMD Radeon RX 6700 XT": "rx-6700-xt", "Nvidia RTX 3070": "rtx-3070",
    "Nvidia RTX 4060 Mobile": "rtx-4060-laptop", "Intel Arc A750": "arc-a750",
    "Intel Arc B580": "arc-b580", "Intel Arc B570": "arc-b570",
    "AMD Ryzen Al Max+ 395": "radeon-8060s", "RX 7900 XTX": "rx-7900-xtx",
    "RX 7900 XT": "rx-7900-xt", "RX 7800 XT": "rx-7800-xt", "RX 7900 GRE": "rx-7900-gre",
    "RX 6900 XT": "rx-6900-xt", "RTX 4060 Ti": "rtx-4060-ti-8gb", "RX 6800 XT": "rx-6800-xt",
    "Intel Arc Pro B60": "arc-pro-b60", "Intel Arc Pro B50": "arc-pro-b50", "Intel Arc A770M": "arc-a770m",
    "RTX 4090 D": "rtx-4090-d", "Quadro RTX 8000": "quadro-rtx-8000", "Quadro RTX 6000": "quadro-rtx-6000",
    "Quadro RTX 4000": "quadro-rtx-4000", "Tesla P40": "tesla-p40", "GTX 1080 Ti": "gtx-1080-ti",
    "Titan Xp": "titan-xp", "Nvidia GTX 1070": "gtx-1070",
}
WHY = {
    "RTX PRO 6000 Blackwell": "edition (Workstation / Max-Q / Server) not printed",
    "H100 80 GB": "PCIe or SXM not printed",
    "A100 80 GB": "PCIe or SXM not printed",
    "RTX 3080": "10 GB or 12 GB not printed in the parse (different bandwidths)",
    "Tesla V100": "16/32 GB and PCIe/SXM2 not printed",
    "RTX 3060": "12 GB or 8 GB not printed in the parse (different bandwidths)",
    "Tesla P100": "12/16 GB and PCIe/SXM2 not printed",
    "Jetson AGX Orin": "32 GB or 64 GB not printed",
    "Intel Arc A770": "8 GB or 16 GB not printed in the parse (different bandwidths)",
}
for c in ["Apple M3 Ultra", "Apple M4 Max", "Apple M2 Ultra", "Apple M3", "Apple M2 Pro", "Apple M2", "Apple M1"]:
    WHY[c] = "Apple GPU under MoltenVK: GPU core count and memory not printed in the parse"
for c in ["Intel Core Ultra 200 Series", "AMD Ryzen AI 9 300 Series", "AMD Ryzen 6000 Series",
          "AMD Ryzen 8000 Series", "AMD Ryzen Z1 Extreme", "Intel Core Ultra 100 Series"]:
    WHY[c] = "a processor series, not one integrated GPU"

# Extra notes for a mapped name.
MAPPING_NOTES = {
    "RTX 4060 Ti": "8 GB or 16 GB not printed in the parse: rtx-4060-ti-8gb, whose bandwidth and rates are "
                   "the 16 GB card's (the plan is the same for either)",
    "AMD Ryzen Al Max+ 395": "memory size not in the parse: bare radeon-8060s",
}

HEADER = """\
# The llama.cpp scoreboards' rows (CUDA discussion #15013, ROCm #15021, Vulkan #10879 of ggml-org/llama.cpp: llama-bench
#   -ngl 99 on llama-2-7b.Q4_0.gguf, pp512 and tg128, batch 1, each row a user's GPU), compared with the planner and never
#   fitted (accuracy.rs, scoreboard_rows_against_published_measurements): an out-of-sample check on builds of Aug 2025 to
#   Apr 2026 over 74 GPUs. Read from a machine-parsed copy, not from the discussions (not readable here): smoothyy3/
#   willitrun's data/normalized/llama_cpp_cuda.jsonl (pinned in each row's source), which its scripts/ingest_llama_cpp.py
#   parsed from the discussions' HTML on 2026-04-05. Each value is that file's, exactly; the parse stores numbers as JSON
#   floats (a trailing zero of the table is gone: 274.20 reads 274.2), drops the table's Memory column, keeps one row per
#   GPU and test, and names each GPU as the table does (chip). Where independent quotes of the scoreboards were found
#   (about ten GPUs, their commits included) every shared value agrees. Its Apple (#4167) rows mix core-count variants and
#   are not used. runtime_version: the commit the table prints (no build number or date is printed; the rows are planned
#   at the newest build). notes: fa 0 / fa 1 as the parse labels the CUDA and ROCm tables; Vulkan rows ran the default
#   (fa 0). spec_id: empty where the print does not name one part or the spec database has no entry (notes say which).
"""


def field(notes, key):
    """The value of `key=` in a record's notes ("a=1; b=2; chip=X"), or ''."""
    for part in notes.split(";"):
        part = part.strip()
        if part.startswith(key + "="):
            return part[len(key) + 1:].strip()
    return ""


def value_text(v):
    """A JSON number as the CSV prints it: the parse's float, shortest form."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"value {v!r} is not a number")
    return str(v) if isinstance(v, int) else repr(v)


def make(source_text):
    rows = {}
    for n, line in enumerate(source_text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            notes = d["notes"]
            bid = d["benchmark_id"]
            value = d["value"]
            if not isinstance(notes, str) or not isinstance(bid, str):
                raise TypeError("notes and benchmark_id must be strings")
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{SOURCE_FILE.name}: line {n}: not a willitrun record ({e})")
        backend = field(notes, "backend")
        if backend not in DISC:
            continue
        chip = field(notes, "chip")
        if not chip:
            raise SystemExit(f"{SOURCE_FILE.name}: line {n}: notes name no chip")
        if "__pp512__" in bid:
            test = "pp"
        elif "__tg128__" in bid:
            test = "tg"
        else:
            raise SystemExit(f"{SOURCE_FILE.name}: line {n}: benchmark_id {bid!r} is neither pp512 nor tg128")
        fa = bid.endswith("__fa")
        r = rows.setdefault((backend, fa, chip, field(notes, "commit")), {})
        if test in r:
            raise SystemExit(f"{SOURCE_FILE.name}: line {n}: a second {test} value for {chip} ({backend})")
        r[test] = (value_text(value), field(notes, "stddev"))

    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["source", "runtime", "runtime_version", "device", "spec_id", "model", "catalog_model", "format",
                "backend", "batch", "pp_tokens", "tg_tokens", "pp_tok_s", "tg_tok_s", "notes"])
    for (backend, fa, chip, commit), r in rows.items():
        spec = SPEC.get(chip, "")
        pp, ppsd = r.get("pp", ("", ""))
        tg, tgsd = r.get("tg", ("", ""))
        items = [] if backend == "Vulkan" else ["fa 1" if fa else "fa 0"]
        items.append(f"discussion #{DISC[backend]} ({'with' if fa else 'without'} flash attention as the parse labels it)")
        items.append(f"stddev pp {ppsd or 'none'} tg {tgsd or 'none'}")
        if not spec:
            items.append("spec_id empty: " + WHY.get(chip, "no spec entry"))
        if chip in MAPPING_NOTES:
            items.append(MAPPING_NOTES[chip])
        if backend == "Vulkan":
            items.append("no flash-attention split in the parse: the build default (fa 0)")
        version = f"build {commit}" if commit and commit not in ("?", "N/A") else ""
        w.writerow([SRC, "llama.cpp", version, chip, spec, "Llama 2 7B", "llama-2-7b", "Q4_0", backend, 1, 512, 128,
                    pp, tg, "; ".join(items)])
    return HEADER + out.getvalue()


def main():
    check = "--check" in sys.argv[1:]
    text = make(SOURCE_FILE.read_text(encoding="utf-8"))
    if check:
        if OUT_FILE.read_text(encoding="utf-8") != text:
            print(f"{OUT_FILE.relative_to(ROOT)} differs from what scripts/scoreboard.py makes of "
                  f"{SOURCE_FILE.relative_to(ROOT)}: run `python3 scripts/scoreboard.py`", file=sys.stderr)
            return 1
        print("scoreboard.csv matches its source")
        return 0
    OUT_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {OUT_FILE.relative_to(ROOT)}: {text.count(chr(10)) - HEADER.count(chr(10)) - 1} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
