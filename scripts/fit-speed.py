#!/usr/bin/env python3
"""Fit the planner's decode and prefill speed constants on the calibration
corpus and regenerate docs/accuracy.md (issue 16, item 3).

Deterministic: same corpus, same planner -> same constants.

1. `cargo test -p ai-hwaccel --test accuracy -- --ignored ideal_rates_for_fit`
   prints, for every row of crates/ai-hwaccel/tests/calibration/speed.csv,
   the planner's decode and prefill tokens/s at efficiency 1 with no
   overhead (x = 1 / that rate is the ideal time per token), the row's
   measured tokens/s, the device class, format width, decoder layers L and
   whether the row is held out (FNV-1a 64 of the CSV line, 0 mod 5), and
   the row's tensor-parallel degree; then the same for every row of
   crates/ai-hwaccel/tests/calibration/latency.csv, with the row's printed
   TPOT and TTFT (ms) and prompt length.
   Latency rows are converted here, a computation on the printed figures
   (the CSV is not touched): decode time per token = TPOT, so the measured
   decode tokens/s is 1000 / TPOT; prefill time per token = TTFT / prompt
   length, so the measured prefill tokens/s is 1000 * prompt / TTFT (the
   time to first token also holds the request's scheduling and its first
   decode step, which this attributes to prefill). They then enter their
   runtime's fit like speed.csv rows, under the same held-out rule (the
   hash of their own CSV line).
2. Per device class and runtime, over the rows that are not held out, a
   least-squares fit of  t = x * a_w + L * c  on the relative error
   sum(((x*a_w + L*c) / t_measured - 1)^2): one a_w per format width
   (efficiency = 1/a_w), one per-layer overhead c per class. A negative c
   is set to 0 and the widths refitted. A class with fewer rows than its
   parameters + 2, or with rows of fewer than three devices, is not fitted
   on its own (the pooled fit applies). The same fit with every class
   pooled is the fallback ("any") for classes without rows. Rows run with
   tensor parallelism (notes item "tp N", N > 1) are not fitted: their time
   includes all-reduces, which the efficiency and per-layer overhead do not
   describe; they are reported by the accuracy test only, and give one
   constant: the further seconds a tensor-parallel request waits for its
   first token (fit_requests_tp). A latency row's time per prompt token
   also holds r/n, its runtime's seconds per request over the prompt
   length: the pooled prefill fit fits r beside the rest and the class
   fits hold it fixed. A runtime without
   fitted rows keeps the options' default efficiencies.
   Build date (decode): a row's per-layer time is L * c * exp(d * age),
   age in years between its build's month (builds.csv) and the newest
   build month of its vendor group's fit rows (NVIDIA, AMD, Intel, Apple),
   so c is the newest builds' per-layer time; d, one per group, is the
   value in DECAYS whose fit (cells and device factors) leaves the least
   squared relative decode error over the runtime's fit rows (coordinate
   descent over the groups). A group whose rows span under MIN_SPAN_MONTHS,
   or with fewer than MIN_RECENT_ROWS rows in the last such span, gets no
   term; rows without a build month (other runtimes) keep 1.
3. The table is written between the BEGIN/END FITTED markers of
   crates/ai-hwaccel/src/plan/speed.rs, the accuracy test is run, and its
   table goes into docs/accuracy.md.

Usage: python3 scripts/fit-speed.py   (from the repository root)
"""

import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _spec_entries():
    """The spec database's entries (devices.toml), read once."""
    import tomllib
    return tomllib.loads((ROOT / "crates/ai-hwaccel/src/spec/devices.toml").read_text())["device"]


SPEC_ENTRIES = _spec_entries()


def _chip_keys():
    """Spec id (entry or memory configuration) -> the chip it names: the
    product entry with its bandwidth, compute units and rates, the memory
    size aside (`spec::same_chip` in the crate). Device factors belong to
    the chip: rows of a 64 GB and a 128 GB configuration fit one factor."""
    keys = {}
    for e in SPEC_ENTRIES:
        def key(c):
            return (
                e["id"],
                c.get("memory_bandwidth_bytes_per_s", e.get("memory_bandwidth_bytes_per_s")),
                c.get("compute_units", e.get("compute_units")),
                tuple(sorted(c.get("tflops", e.get("tflops", {})).items())),
            )
        keys[e["id"]] = key({})
        for c in e.get("configs", []):
            keys[c["id"]] = key(c)
    return keys


CHIP = _chip_keys()


def _architectures():
    """Spec id (entry or memory configuration) -> the entry's architecture
    (for NVIDIA the compute capability, "8.6")."""
    out = {}
    for e in SPEC_ENTRIES:
        for i in [e["id"]] + [c["id"] for c in e.get("configs", [])]:
            out[i] = e.get("architecture", "")
    return out


ARCH = _architectures()

# llama.cpp's CUDA backend multiplies quantized prompts on int8 tensor cores
# (MMQ) instead of dequantizing them for FP16 cuBLAS from PR 8075 on (opened
# 2024-06-23, in by 2024-07-07): speed.rs LLAMA_CUDA_MMQ_INT8, as a count of
# months (year * 12 + month - 1).
MMQ_INT8_MONTH = 2024 * 12 + 6


def _cc(sid):
    try:
        major, minor = ARCH.get(sid, "").split(".")
        return (int(major), int(minor))
    except ValueError:
        return None


def ggml_backend(printed):
    """The ggml backend a printed backend column names, as speed.rs
    `GgmlBackend::parse` reads it: the first comma-separated item it knows
    ("RPC,Vulkan" is Vulkan), lowercase; None where none is known (the plan
    then takes the vendor's own, CUDA on NVIDIA)."""
    names = {"cuda": "cuda", "hip": "hip", "rocm": "hip", "metal": "metal", "mtl": "metal",
             "sycl": "sycl", "vulkan": "vulkan", "vk": "vulkan", "opencl": "opencl"}
    for item in printed.split(","):
        b = names.get(item.strip().lower())
        if b:
            return b
    return None


def not_cuda(r):
    """Whether a row ran another ggml backend than CUDA (None is CUDA)."""
    return ggml_backend(r["backend"]) not in (None, "cuda")


def dp4a(r):
    """Whether a row's quantized prompt ran llama.cpp's DP4A MMQ kernels,
    as the planner decides it (speed.rs `dp4a_mmq`, printed by the test):
    on an NVIDIA GPU without tensor cores that has DP4A (compute capability
    6.1 to 6.x: Pascal but the P100) under CUDA, or in a build with
    LLAMA_CUDA_FORCE_MMQ whose MMQ had no int8 tensor-core kernels. Its
    ideal prefill rate is already the DP4A rate (the planner's
    `prompt_rate`), and it is fitted apart, one fraction per runtime
    (DP4A_FRACTION), never in a class cell or a device factor."""
    return r["dp4a"]


# The fitted fraction of the DP4A rate such prompts reach, per runtime: set
# by main() after the final fit (speed.rs PREFILL_DP4A).
DP4A_FRACTION = {}


def mmq_era(r):
    """Whether a row's quantized prompt ran without MMQ on int8 tensor cores
    (speed.rs `without_int8_mmq`): a llama.cpp row in a format below 16
    bits on an NVIDIA GPU, of a build before MMQ_INT8_MONTH or on a GPU
    below compute capability 8.0 (any backend: see speed.rs): V100 and older, which PR 8075 keeps on
    FP16 cuBLAS, and Turing, whose MMQ gained nothing (speed.rs
    `without_int8_mmq`); or a type without MMQ kernels (IQ1_M, speed.rs
    `cuda_mmq_type`, printed as its prompt path)."""
    cc = _cc(r["spec_id"])
    return (
        r["runtime"] == "llama.cpp"
        and group(r["cls"]) == "nvidia"
        and r["width"] != "16-bit"
        and cc is not None
        and not dp4a(r)
        and (
            not_cuda(r)
            or r.get("no_mmq")
            or cc < (8, 0)
            or (r["month"] is not None and r["month"] < MMQ_INT8_MONTH)
        )
    )


# The fitted factor on the prefill time of such a row (1: none), per runtime:
# set by main() before the final fit.
MMQ_ERA = {}


# llama.cpp's Vulkan backend ran AMD's cooperative-matrix GPUs (RDNA 3,
# 3.5 and 4: gfx11, gfx12) on matmul parameters tuned for them from PR
# 18749 (opened 2026-01-11): speed.rs LLAMA_VULKAN_AMD_COOPMAT_TUNING, as
# a count of months.
VULKAN_AMD_TUNING_MONTH = 2026 * 12 + 1


def vulkan_amd_era(r):
    """Whether a row's quantized prompt ran llama.cpp's Vulkan matmul on an
    AMD GPU with cooperative matrices before PR 18749 tuned its parameters
    (speed.rs `vulkan_amd_untuned`)."""
    return (
        r["runtime"] == "llama.cpp"
        and group(r["cls"]) == "amd"
        and r["width"] != "16-bit"
        and ggml_backend(r["backend"]) == "vulkan"
        and ARCH.get(r["spec_id"], "")[:5] in ("gfx11", "gfx12")
        and r["month"] is not None
        and r["month"] < VULKAN_AMD_TUNING_MONTH
    )


# The fitted factor on the prefill time of such a row, per runtime.
VULKAN_AMD_ERA = {}


# The fitted fraction of memory bandwidth a decode step moves the
# linear-attention state at, per runtime (speed.rs LINEAR_STATE): set by
# main(); with its fit rows in LINEAR_STATE_ROWS.
LINEAR_STATE = {}
LINEAR_STATE_ROWS = {}


def dec_x(r):
    """A row's ideal decode seconds per token that the cells' fraction
    scales: all of it, but for the linear-attention state where its runtime
    has a fraction of its own (dec_state)."""
    x = 1.0 / r["dec"]
    return x - r["state"] if r["runtime"] in LINEAR_STATE else x


def dec_state(r):
    """The seconds a decode step moves the linear-attention state in at its
    runtime's fitted fraction (inference.rs `linear_state_seconds`); 0
    without one (the state then stays in dec_x)."""
    f = LINEAR_STATE.get(r["runtime"])
    return r["state"] / f if f else 0.0


def pera(r):
    """The factor on a row's ideal prefill time for its kernels' era."""
    f = MMQ_ERA.get(r["runtime"], 1.0) if mmq_era(r) else 1.0
    if vulkan_amd_era(r):
        f *= VULKAN_AMD_ERA.get(r["runtime"], 1.0)
    return f


def device_k(devices, sid, runtime, q):
    """The device factor a row of spec id `sid` takes in quantity q: its
    own, else that of the same chip's configuration with the most rows
    (`device_factors` in src/plan/speed.rs)."""
    own = devices.get((sid, runtime), {}).get(q)
    if own is not None:
        return own[0]
    best = None
    for (other, rt), d in sorted(devices.items()):
        if rt != runtime or q not in d or CHIP.get(other) is None or CHIP.get(other) != CHIP.get(sid):
            continue
        if best is None or d[q][1] > best[1]:
            best = d[q]
    return best[0] if best else 1.0
SPEED_RS = ROOT / "crates/ai-hwaccel/src/plan/speed.rs"
DOC = ROOT / "docs/accuracy.md"

CLASSES = {
    "apple": "Apple",
    "nvidia-consumer": "NvidiaConsumer",
    "nvidia-workstation": "NvidiaWorkstation",
    "nvidia-datacenter": "NvidiaDatacenter",
    "nvidia-soc": "NvidiaSoc",
    "amd": "Amd",
    "amd-datacenter": "AmdDatacenter",
    "intel": "Intel",
    "cpu": "Cpu",
    "other": "Other",
    "any": "Any",
}
WIDTHS = {
    "16-bit": "Bits16",
    "8-bit": "Bits8",
    "<8-bit": "Low",
    "4-7 bit": "Bits4",
    "<4-bit": "Below4",
}
# The finer widths below 8 bits (FormatWidth::of) and the coarser one that
# covers them (FormatWidth::coarser).
COARSER = {"4-7 bit": "<8-bit", "<4-bit": "<8-bit"}
RUNTIMES = {"llama.cpp": "LlamaCpp", "vllm": "Vllm", "sglang": "Sglang", "trtllm": "Trtllm"}


def cargo_test(args):
    cmd = ["cargo", "test", "-q", "-p", "ai-hwaccel", "--test", "accuracy", "--"] + args
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def ideal_rows():
    rc, out = cargo_test(["--ignored", "--nocapture", "--exact", "ideal_rates_for_fit"])
    if rc != 0:
        sys.exit(out)
    rows = []
    for line in out.splitlines():
        if not line.startswith("IDEAL\t"):
            continue
        (_, part, cls, width, runtime, tg, dec, pp, pre, layers, spec_id, z, tp,
         tpot, ttft, input_len, build, share, backend, pcls, dp4a_path, state,
         wread) = line.split("\t")
        if tpot:
            # A latency.csv row: tokens/s from the printed milliseconds.
            assert not tg and not pp
            tg = repr(1000.0 / float(tpot))
            pp = repr(1000.0 * int(input_len) / float(ttft))
        rows.append(
            dict(
                part=part,
                cls=cls,
                width=width,
                runtime=runtime,
                # Measured tokens/s; None where the row measures no such test.
                tg=float(tg) if tg else None,
                dec=float(dec) if dec else None,
                pp=float(pp) if pp else None,
                pre=float(pre) if pre else None,
                layers=int(layers),
                spec_id=spec_id,
                z=float(z) if z and z.lower() != "nan" else 0.0,
                tp=int(tp),
                # latency.csv rows: the printed TTFT (seconds) and prompt.
                ttft_s=float(ttft) / 1000.0 if ttft else None,
                input_len=int(input_len) if input_len else None,
                # The build's month as a count of months (year * 12 +
                # month - 1); None where the row has none (builds.csv
                # dates llama.cpp rows only).
                month=int(build[:4]) * 12 + int(build[5:7]) - 1 if build else None,
                # The routed experts' share of the row's prefill FLOPs.
                share=float(share) if share else 0.0,
                # 1 / prompt length for a latency.csv row (its time per
                # prompt token also holds 1/n of the request's own time),
                # else 0.
                inv_n=1.0 / int(input_len) if tpot else 0.0,
                # The llama.cpp backend as printed (CUDA, ROCm, Vulkan,
                # Metal, SYCL); empty for other runtimes' rows.
                backend=backend,
                # The planner runs the row's prompt on llama.cpp's DP4A MMQ
                # kernels (speed.rs dp4a_mmq).
                dp4a=dp4a_path == "dp4a",
                # Its weights' type has no CUDA MMQ kernel (speed.rs
                # cuda_mmq_type: IQ1_M), so it is dequantized for cuBLAS.
                no_mmq=dp4a_path == "no-mmq",
                # Seconds a decode step moves the linear-attention state in
                # at the full bandwidth (read and rewritten); 0 without such
                # layers.
                state=float(state) if state and state.lower() != "nan" else 0.0,
                # Seconds per prompt token the prompt's passes read the
                # weights in at the full bandwidth (inference.rs
                # prompt_pass_weight_seconds); `pre` leaves them out.
                wread=float(wread) if wread and wread.lower() != "nan" else 0.0,
                # The class whose decode cell (bandwidth fraction) scales them.
                dcls=cls,
            )
        )
        # A data-center GPU's int8 MMQ prompt is planned on the workstation
        # cell at the per-SM reference (speed.rs mmq_reference_ratio; the
        # test printed its ideal prefill rate at that reference): the row
        # is two rows to the fit, its decode in its own class and its
        # prefill in the workstation class.
        if pcls and pcls != cls:
            r = rows.pop()
            rows.append(dict(r, pp=None, pre=None, ttft_s=None))
            rows.append(dict(r, cls=pcls, tg=None, dec=None))
    return rows


def solve(a, b):
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        if abs(m[p][i]) < 1e-300:
            return None
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                for k in range(i, n + 1):
                    m[r][k] -= f * m[i][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def least_squares(samples, widths, with_overhead, score=None, request=0.0):
    """samples: (width, x, L, z, t, 1/n). score: None to fit the bytes per
    attention score s beside the rest, else s fixed; request: None to fit
    the seconds r each request adds to its prompt (a latency row's time per
    prompt token holds r/n), else r fixed. Returns ({width: a}, c, s, r) or
    None."""
    cols = (
        list(widths)
        + (["c"] if with_overhead else [])
        + (["s"] if score is None else [])
        + (["r"] if request is None else [])
    )
    k = len(cols)
    ata = [[0.0] * k for _ in range(k)]
    atb = [0.0] * k
    for w, x, layers, z, t, inv_n in samples:
        row = [0.0] * k
        row[cols.index(w)] = x / t
        if with_overhead:
            row[cols.index("c")] = layers / t
        if score is None:
            row[cols.index("s")] = z / t
        if request is None:
            row[cols.index("r")] = inv_n / t
        target = (
            1.0
            - (z * score / t if score is not None else 0.0)
            - (inv_n * request / t if request is not None else 0.0)
        )
        for i in range(k):
            atb[i] += row[i] * target
            for j in range(k):
                ata[i][j] += row[i] * row[j]
    sol = solve(ata, atb)
    if sol is None:
        return None
    a = {w: sol[i] for i, w in enumerate(widths)}
    c = sol[cols.index("c")] if with_overhead else 0.0
    s = sol[cols.index("s")] if score is None else score
    r = sol[cols.index("r")] if request is None else request
    return a, c, s, r


# A class is fitted on its own only with at least two rows more than the
# parameters it needs (one per width and the overhead); otherwise the pooled
# fit applies to it. One or two rows would be reproduced exactly, which says
# nothing about rows not seen.
SPARE_ROWS = 2


# A class is fitted on its own only when its rows measure at least this many
# different devices (spec entries); a cell fitted on one or two cards
# describes those cards, not the class (AMD Instinct: the MI50 and MI100
# rows alone put the MI300X's prompt rate ten times over what AMD's
# multi-GPU runs measure), so the pooled fit applies until then.
MIN_CLASS_DEVICES = 3


# A format width is fitted only with at least this many rows; a width with
# fewer falls back to the pooled fit or, without one, the options' defaults.
MIN_WIDTH_ROWS = 3


def fit(samples, score=0.0, request=0.0):
    """score: the bytes per attention score, fixed; None fits it too (only
    kept when not negative, else fixed at 0). request: the seconds per
    request, likewise (fitted only where latency rows are among the
    samples)."""
    counts = {}
    for s in samples:
        counts[s[0]] = counts.get(s[0], 0) + 1
    samples = [s for s in samples if counts[s[0]] >= MIN_WIDTH_ROWS]
    widths = sorted({s[0] for s in samples})
    if len(samples) < len(widths) + 1 + SPARE_ROWS:
        return None
    # An overhead needs more than one model size per class to be separable.
    sizes = {s[2] for s in samples}
    latency = any(s[5] > 0 for s in samples)
    for sc in ([None, 0.0] if score is None else [score]):
        for rq in ([None, 0.0] if request is None and latency else [request or 0.0]):
            res = (
                least_squares(samples, widths, len(sizes) > 1, sc, rq)
                if len(samples) > len(widths)
                else None
            )
            if res is None or res[1] < 0:
                res = least_squares(samples, widths, False, sc, rq)
            if (
                res is not None
                and res[2] >= 0
                and res[3] >= 0
                and all(v > 0 for v in res[0].values())
            ):
                return res
    return None


# A device's own factor is fitted only with at least this many rows
# measured on it (per quantity); fewer leave its class's cell alone.
MIN_DEVICE_ROWS = 4


def device_factor(rows):
    """The factor k on the class efficiency that minimises
    sum(((x/(e k) + L c + z s) / t - 1)^2) over a device's rows: linear in
    u = 1/k. rows: (x/e, L c + z s, t)."""
    num = den = 0.0
    for xe, rest, t in rows:
        a = xe / t
        num += a * (1.0 - rest / t)
        den += a * a
    return den / num if num > 0 else None


# Device groups with a build-date decay of their own, by vendor (each its own
# backends, kernels and launch path): NVIDIA's (CUDA, whose builds launch a
# batch-1 token as one CUDA graph since spring 2024, PR 6766; Vulkan), AMD's
# (HIP, Vulkan), Apple's (Metal) and Intel's (SYCL, Vulkan).
def group(cls):
    for g in ("nvidia", "amd", "apple", "intel"):
        if cls.startswith(g):
            return g
    return None


# A group gets a decay only when its fit rows' builds span at least this
# many months, and at least MIN_RECENT_ROWS of them are of builds within that
# span of its newest: a shorter span cannot tell a build's speed from a
# card's, and one recent row would set the decay of every plan alone.
MIN_SPAN_MONTHS = 12
MIN_RECENT_ROWS = 3


# llama.cpp's CUDA backend launches a decode step as one CUDA graph from PR
# 6766 (May 2024) on, but never on GPUs below compute capability 8.0 until
# PR 25749 (opened 2026-07-16) let Volta and Turing have them; Pascal and
# older still run without (speed.rs LLAMA_CUDA_GRAPHS, LLAMA_CUDA_GRAPHS_VOLTA,
# without_cuda_graphs). As counts of months (year * 12 + month - 1).
CUDA_GRAPHS_MONTH = 2024 * 12 + 4
CUDA_GRAPHS_VOLTA_MONTH = 2026 * 12 + 7


def decode_month(r, newest):
    """The build month whose per-layer decode time a row takes (speed.rs
    decode_build): its own (None: the newest, `newest`), except a row that
    ran without CUDA graphs (a llama.cpp row on the CUDA backend of an
    NVIDIA GPU below compute capability 8.0, 7.x only before
    CUDA_GRAPHS_VOLTA_MONTH), whose month is at most the one before
    CUDA_GRAPHS_MONTH."""
    month = r["month"]
    cc = _cc(r["spec_id"])
    if (
        r["runtime"] != "llama.cpp"
        or group(r["cls"]) != "nvidia"
        or row_backend(r) != "cuda"
        or cc is None
        or cc >= (8, 0)
        or (cc >= (7, 0) and (newest if month is None else month) >= CUDA_GRAPHS_VOLTA_MONTH)
    ):
        return month
    return min(newest if month is None else month, CUDA_GRAPHS_MONTH - 1)


def era(r, decays):
    """The build-date factor on a row's per-layer decode time:
    exp(decay * age), age in years before the newest build of the row's
    runtime and device group (the row's month as decode_month gives it, no
    earlier than the oldest), decay that group's (1 for rows without a
    build month, unless decode_month gives one, or a group without a
    decay)."""
    key = (r["runtime"], group(r["cls"]))
    if key not in decays:
        return 1.0
    decay, newest, oldest = decays[key]
    month = decode_month(r, newest)
    if month is None:
        return 1.0
    return math.exp(decay * max(0, newest - max(month, oldest)) / 12.0)


RUST_BACKENDS = {"cuda": "Cuda", "hip": "Hip", "metal": "Metal", "sycl": "Sycl",
                 "vulkan": "Vulkan", "opencl": "Opencl"}
# As llama-bench prints them (GgmlBackend::printed).
PRINTED_BACKENDS = {"cuda": "CUDA", "hip": "ROCm", "metal": "Metal", "sycl": "SYCL",
                    "vulkan": "Vulkan", "opencl": "OpenCL"}


def row_backend(r):
    """The ggml backend a llama.cpp row ran (lowercase): its printed one
    (ggml_backend), else its vendor's own (speed.rs
    `DeviceClass::own_backend`); None for other runtimes and for devices
    without one."""
    if r["runtime"] != "llama.cpp":
        return None
    return ggml_backend(r["backend"]) or {
        "nvidia": "cuda", "amd": "hip", "apple": "metal", "intel": "sycl",
    }.get(group(r["cls"]))


def moe(r, moes):
    """The factor on a row's ideal prefill time for its routed experts'
    GEMMs: 1 + (m - 1) * share, m its runtime's factor on its backend
    (moes[(runtime, backend)]), else its runtime's (moes[runtime]), else 1."""
    m = moes.get((r["runtime"], row_backend(r)), moes.get(r["runtime"], 1.0))
    return 1.0 + (m - 1.0) * r["share"]


def wr(r, cells, devices, runtime):
    """Seconds per prompt token a row's prompt passes read its weights in
    (inference.rs prompt_pass_weight_seconds): the full-bandwidth time over
    the device's decode fraction (its class's decode cell and device
    factor, as the planner's stage takes them)."""
    if not r.get("wread"):
        return 0.0
    c = cell_for(cells, runtime, dict(r, cls=r.get("dcls", r["cls"])), "decode")
    if c is None:
        return r["wread"]
    return r["wread"] / (c[0] * device_k(devices, r["spec_id"], runtime, "decode"))


def cell_for(cells, runtime, r, q):
    """The order of speed.rs `cells`: at the finest width the class's
    cell, then the pooled one; then the same at the coarser width. Before
    that, as speed.rs `width_scaled`: a GPU class without a cell at the
    finest width takes its own coarser cell, the efficiency scaled by the
    pooled finest / pooled coarser ratio, where all three exist."""
    w, cls = r["width"], r["cls"]
    if cls not in ("cpu", "other", "any") and w in COARSER and not cells.get((cls, runtime, w), {}).get(q):
        own = cells.get((cls, runtime, COARSER[w]), {}).get(q)
        fine = cells.get(("any", runtime, w), {}).get(q)
        pooled = cells.get(("any", runtime, COARSER[w]), {}).get(q)
        if own and fine and pooled:
            return (own[0] * fine[0] / pooled[0], own[1], own[2])
    widths = [r["width"]] + ([COARSER[r["width"]]] if r["width"] in COARSER else [])
    # Then the 16-bit cells, as speed.rs `cells` ends.
    widths += ["16-bit"] if r["width"] != "16-bit" else []
    for w in widths:
        for cls in (r["cls"],) if r["cls"] == "cpu" else (r["cls"], "any"):
            c = cells.get((cls, runtime, w), {}).get(q)
            if c:
                return c
    return None


# Era factors tried for quantized CUDA prompts before MMQ on int8 tensor
# cores, and the fit rows needed in each era.
ERA_FACTORS = [1.0 + i * 0.05 for i in range(0, 41)]
# Fractions of the bandwidth tried for the linear-attention state, and the
# fit rows of such models needed to choose one.
STATE_FRACTIONS = [i * 0.005 for i in range(2, 121)]
MIN_STATE_ROWS = 3
MIN_ERA_ROWS = 5

# Factors tried for the routed experts' prefill time.
MOE_FACTORS = [1.0 + i * 0.1 for i in range(0, 71)]
# A runtime, and a llama.cpp backend, gets a factor only with this many fit
# rows of mixture-of-experts models that measure prefill.
MIN_MOE_ROWS = 3


def fit_error(rows, runtime, q, decays, moes, cells, devices, scores, requests=None, keep=None):
    """Sum of squared relative errors of quantity q ("decode" or "prefill")
    over a runtime's fit rows (those `keep` accepts, where given), as the
    planner estimates them with these cells, device factors, build-date
    decays and MoE factors."""
    ideal, meas = ("dec", "tg") if q == "decode" else ("pre", "pp")
    total = 0.0
    for r in rows:
        if r["part"] != "fit" or r["runtime"] != runtime or not r[ideal] or not r[meas]:
            continue
        if keep is not None and not keep(r):
            continue
        # DP4A prompts are fitted apart, after the rest (fit_dp4a).
        if q == "prefill" and dp4a(r):
            continue
        c = cell_for(cells, runtime, r, q)
        if c is None or r["cls"] == "other":
            continue
        eff, over, _ = c
        k = device_k(devices, r["spec_id"], runtime, q)
        if q == "decode":
            t = dec_x(r) / (eff * k) + r["layers"] * era(r, decays) * over + dec_state(r)
        else:
            t = (
                (1.0 / r[ideal]) * moe(r, moes) * pera(r) / (eff * k)
                + r["layers"] * over
                + r["z"] * scores.get(runtime, 0.0)
                + r["inv_n"] * (requests or {}).get(runtime, 0.0)
                + wr(r, cells, devices, runtime)
            )
        total += (t * r[meas] - 1.0) ** 2
    return total


# Build-date decay rates tried (per year), from none to a halving in about
# five months; the one with the least decode error is kept.
DECAYS = [i * 0.05 for i in range(0, 41)]


# `=\s*&[`: rustfmt moves a short table to the line after `=`.
KV_READ_RE = re.compile(r"pub const KV_READ: &\[\(RuntimeKind, bool, f64\)\] =\s*&\[(.*?)\];", re.S)


def kv_read_lines(kv_reads):
    """The KV_READ constant's Rust lines for {(runtime, fused): fraction}."""
    out = [
        "/// Fitted fraction of memory bandwidth a decode step reaches reading the",
        "/// KV cache, per runtime and attention kind (fused or not), on GPUs: the",
        "/// attention kernels' own efficiency, which batches of sequences expose",
        "/// (each reads its own cache every step). Fitted on published batched",
        "/// decode runs (`tests/calibration/batched.csv`).",
        "pub const KV_READ: &[(RuntimeKind, bool, f64)] = &[",
    ]
    for (runtime, fused), f in sorted(kv_reads.items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {'true' if fused else 'false'}, {f:.4}),")
    out.append("];")
    return out


def current_rows(table_re, fields):
    """The rows of a per-runtime table as speed.rs holds it now (the block
    `table_re` finds): (runtime name, *the `fields` pattern's groups)."""
    m = table_re.search(SPEED_RS.read_text())
    names = {v: k for k, v in RUNTIMES.items()}
    return [
        (names[rt], *rest)
        for rt, *rest in re.findall(rf"RuntimeKind::(\w+),\s*{fields}", m.group(1) if m else "")
    ]


def current_kv_reads():
    """KV_READ as speed.rs holds it now: {(runtime, fused): fraction}."""
    return {
        (rt, fused == "true"): float(f)
        for rt, fused, f in current_rows(KV_READ_RE, r"(true|false),\s*([0-9.eE+-]+)")
    }


def fit_kv_reads():
    """4. The KV-read fraction per runtime and attention kind: over the fit
    rows of batched.csv (published llama-batched-bench lines) of dense
    models, the planned
    step is A + K * u (A: the step with the cache read for free; K: reading
    it at the full bandwidth; u = 1 / fraction), and u minimises the summed
    squared relative error sum(((A + K u) / T - 1)^2) over the measured
    steps T = B / S_TG: u = sum(k (1 - a)) / sum(k^2), a = A / T, k = K / T.
    The planner's cells are the ones just written (A holds them); the
    fraction itself does not enter A or K, so the fit does not depend on
    the KV_READ it replaces."""
    rc, out = cargo_test(["--ignored", "--nocapture", "--exact", "batched_parts_for_fit"])
    if rc != 0:
        sys.exit(out)
    sums = {}
    for line in out.splitlines():
        if not line.startswith("BATCHED\t"):
            continue
        _, part, runtime, fused, moe, batch, a, k, t = line.split("\t")
        # Dense models only: a mixture of experts' step also reads the experts
        # its batch routes to, which the planner takes as uniform top-k
        # routing (1 - (1 - k/E)^B of them); llama-batched-bench's random
        # tokens route far more alike (gpt-oss-120b at B = 32 runs twice as
        # fast as uniform routing allows), so its rows would fit that
        # difference, not attention's reads. They are compared, not fitted.
        if part != "fit" or moe == "1":
            continue
        a, k, t = float(a) / float(t), float(k) / float(t), float(t)
        num, den, n = sums.get((runtime, fused == "1"), (0.0, 0.0, 0))
        sums[(runtime, fused == "1")] = (num + k * (1.0 - a), den + k * k, n + 1)
    fitted = {}
    for key, (num, den, n) in sorted(sums.items()):
        # Too few rows for a constant of its own: the decode fraction applies.
        if n < 6 or den <= 0.0 or num <= 0.0:
            continue
        fitted[key] = 1.0 / (num / den)
        print("KV read fraction", key, round(fitted[key], 4), "from", n, "fit rows")
    return fitted


EAGER_RE = re.compile(
    r"pub const EAGER_TP_LAYER_SECONDS: &\[\(RuntimeKind, f64, u32\)\] =\s*&\[(.*?)\];", re.S
)


# Fit rows a runtime needs before its eager per-layer time is fitted.
MIN_EAGER_ROWS = 6


def eager_lines(eager):
    """The EAGER_TP_LAYER_SECONDS constant's Rust lines for {runtime: (s, rows)}."""
    out = [
        "/// Fitted seconds per decoder layer of a tensor-parallel decode step that a",
        "/// runtime runs without CUDA graphs, each kernel and all-reduce launched",
        "/// from the host (vLLM `--enforce-eager`, and every vLLM before PR 1926 of",
        "/// December 2023), in place of its fitted per-layer time; per runtime, with",
        "/// the fit rows behind it (speed.csv rows with the notes item `no CUDA",
        "/// graphs`).",
        "pub const EAGER_TP_LAYER_SECONDS: &[(RuntimeKind, f64, u32)] = &[",
    ]
    for runtime, (sec, n) in sorted(eager.items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {sec:.4e}, {n}),")
    out.append("];")
    return out


def current_eager():
    """EAGER_TP_LAYER_SECONDS as speed.rs holds it now: {runtime: (s, rows)}."""
    return {
        rt: (float(sec), int(n))
        for rt, sec, n in current_rows(EAGER_RE, r"([0-9.eE+-]+),\s*(\d+)")
    }


def fit_eager():
    """5. The per-layer decode time without CUDA graphs, per runtime with
    MIN_EAGER_ROWS fit rows run so (speed.csv notes item "no CUDA graphs";
    all tensor-parallel): the test prints each row's planned step P, its
    layers L and the per-layer seconds c0 P holds; the step without them is
    R = P - L c0, and c minimises sum(((R + L c) / T - 1)^2) over the
    measured steps T = 1 / tokens/s: c = sum(k (1 - a)) / sum(k^2), a = R / T,
    k = L / T. The planner's cells are the ones just written (R holds them)."""
    rc, out = cargo_test(["--ignored", "--nocapture", "--exact", "eager_parts_for_fit"])
    if rc != 0:
        sys.exit(out)
    sums = {}
    for line in out.splitlines():
        if not line.startswith("EAGER\t"):
            continue
        _, part, runtime, tg, step, layers, applied = line.split("\t")
        if part != "fit":
            continue
        t = 1.0 / float(tg)
        rest = float(step) - int(layers) * float(applied)
        a, k = rest / t, int(layers) / t
        num, den, n = sums.get(runtime, (0.0, 0.0, 0))
        sums[runtime] = (num + k * (1.0 - a), den + k * k, n + 1)
    fitted = {}
    for runtime, (num, den, n) in sorted(sums.items()):
        if n < MIN_EAGER_ROWS or den <= 0.0 or num <= 0.0:
            continue
        fitted[runtime] = (num / den, n)
        print("eager per-layer seconds", runtime, f"{num / den:.4e}", "from", n, "fit rows")
    return fitted


def fit_linear_state(rows, decays):
    """The fraction of the bandwidth a decode step moves the linear-attention
    state at (LINEAR_STATE), per runtime with MIN_STATE_ROWS fit rows of
    such models measuring decode: the value in STATE_FRACTIONS with the
    least decode error over them, the cells refitted for each."""
    for runtime in sorted({r["runtime"] for r in rows}):
        hybrid = [
            r for r in rows
            if r["runtime"] == runtime and r["part"] == "fit" and r["state"] > 0 and r["dec"] and r["tg"]
        ]
        if len(hybrid) < MIN_STATE_ROWS:
            continue

        def serror(f):
            LINEAR_STATE[runtime] = f
            cells, scores, devices, _ = fit_all(rows, decays, {})
            # A fraction so small that the state's time exceeds a row's
            # measured step leaves a cell unfitted (no positive efficiency),
            # and fit_error skips rows without a cell: such a fraction would
            # look better than it is, so it is refused.
            if any(cell_for(cells, runtime, r, "decode") is None for r in hybrid):
                return float("inf")
            return fit_error(
                rows, runtime, "decode", decays, {}, cells, devices, scores, keep=lambda r: r["state"] > 0
            )

        LINEAR_STATE[runtime] = min(STATE_FRACTIONS, key=serror)
        LINEAR_STATE_ROWS[runtime] = len(hybrid)


def main():
    # Tensor-parallel rows are reported, never fitted (see the docstring),
    # but for the wait they add to a request's first token.
    every = ideal_rows()
    rows = [r for r in every if r["tp"] == 1]
    # Each group's newest and oldest build month over its decode fit rows.
    spans = {}
    for r in rows:
        g = group(r["cls"])
        if r["month"] is None or g is None or r["part"] != "fit" or not (r["dec"] and r["tg"]):
            continue
        lo, hi = spans.get((r["runtime"], g), (r["month"], r["month"]))
        spans[(r["runtime"], g)] = (min(lo, r["month"]), max(hi, r["month"]))
    def recent(key):
        hi = spans[key][1]
        return sum(
            1
            for r in rows
            if (r["runtime"], group(r["cls"])) == key
            and r["part"] == "fit"
            and r["dec"]
            and r["tg"]
            and r["month"] is not None
            and hi - r["month"] < MIN_SPAN_MONTHS
        )

    decays = {
        k: (0.0, hi, lo)
        for k, (lo, hi) in spans.items()
        if hi - lo >= MIN_SPAN_MONTHS and recent(k) >= MIN_RECENT_ROWS
    }
    # The linear-attention state's fraction first, so that the decays are
    # not chosen to explain the state's time (then again with them).
    fit_linear_state(rows, decays)
    # Coordinate descent over the groups' decays, each the value in DECAYS
    # with the least decode error with the others held (three sweeps).
    for _ in range(3):
        for key in sorted(decays):
            runtime = key[0]

            def error(d):
                trial = dict(decays)
                trial[key] = (d,) + decays[key][1:]
                cells, scores, devices, _ = fit_all(rows, trial, {})
                return fit_error(rows, runtime, "decode", trial, {}, cells, devices, scores)

            decays[key] = (min(DECAYS, key=error),) + decays[key][1:]
    # The state's fraction once more, with the decays chosen.
    fit_linear_state(rows, decays)
    # The era factor of quantized CUDA prompts before MMQ on int8 tensor
    # cores (mmq_era), where fit rows of both eras exist: the value in
    # ERA_FACTORS with the least prefill error.
    for runtime in sorted({r["runtime"] for r in rows}):
        fit_pre = [r for r in rows if r["runtime"] == runtime and r["part"] == "fit" and r["pre"] and r["pp"]]
        before = [r for r in fit_pre if mmq_era(r)]
        after = [
            r for r in fit_pre
            if not mmq_era(r) and not dp4a(r) and group(r["cls"]) == "nvidia" and r["width"] != "16-bit"
        ]
        if len(before) < MIN_ERA_ROWS or len(after) < MIN_ERA_ROWS:
            continue

        # Chosen on the CUDA rows (and the other vendors'): the factor is
        # CUDA's change of kernels; NVIDIA rows under Vulkan (whose shaders
        # are not MMQ) take it too, but are too few and too unlike to
        # choose it (four RTX 5090 MoE rows).
        def eerror(f):
            MMQ_ERA[runtime] = f
            cells, scores, devices, _ = fit_all(rows, decays, {})
            return fit_error(
                rows, runtime, "prefill", decays, {}, cells, devices, scores,
                keep=lambda r: not (group(r["cls"]) == "nvidia" and not_cuda(r)),
            )

        MMQ_ERA[runtime] = min(ERA_FACTORS, key=eerror)
    # The era factor of quantized Vulkan prompts on AMD GPUs with cooperative
    # matrices before PR 18749's tuning (vulkan_amd_era), where fit rows of
    # both eras exist: chosen the same way, on every row's prefill error.
    for runtime in sorted({r["runtime"] for r in rows}):
        fit_pre = [r for r in rows if r["runtime"] == runtime and r["part"] == "fit" and r["pre"] and r["pp"]]
        before = [r for r in fit_pre if vulkan_amd_era(r)]
        after = [
            r for r in fit_pre
            if not vulkan_amd_era(r) and group(r["cls"]) == "amd" and r["width"] != "16-bit"
            and ggml_backend(r["backend"]) == "vulkan"
        ]
        if len(before) < MIN_ERA_ROWS or len(after) < MIN_ERA_ROWS:
            continue

        def verror(f):
            VULKAN_AMD_ERA[runtime] = f
            cells, scores, devices, _ = fit_all(rows, decays, {})
            return fit_error(rows, runtime, "prefill", decays, {}, cells, devices, scores)

        VULKAN_AMD_ERA[runtime] = min(ERA_FACTORS, key=verror)
    moes = {}
    for runtime in sorted({r["runtime"] for r in rows}):
        moe_rows = [
            r for r in rows
            if r["runtime"] == runtime and r["part"] == "fit" and r["share"] > 0 and r["pre"] and r["pp"]
        ]
        if len(moe_rows) < MIN_MOE_ROWS:
            continue

        def perror(m):
            trial = {runtime: m}
            cells, scores, devices, _ = fit_all(rows, decays, trial)
            return fit_error(rows, runtime, "prefill", decays, trial, cells, devices, scores)

        moes[runtime] = min(MOE_FACTORS, key=perror)
        # Then each llama.cpp backend with MIN_MOE_ROWS such rows of its own
        # (its mul_mat_id kernels), the runtime's factor staying the
        # fallback of the others; coordinate descent, two sweeps.
        per_backend = {}
        for r in moe_rows:
            b = row_backend(r)
            if b is not None:
                per_backend[b] = per_backend.get(b, 0) + 1
        keys = [(runtime, b) for b, n in sorted(per_backend.items()) if n >= MIN_MOE_ROWS]
        for _ in range(2 if keys else 0):
            for key in keys:

                def berror(m):
                    trial = dict(moes)
                    trial[key] = m
                    cells, scores, devices, _ = fit_all(rows, decays, trial)
                    return fit_error(rows, runtime, "prefill", decays, trial, cells, devices, scores)

                moes[key] = min(MOE_FACTORS, key=berror)
    cells, scores, devices, requests = fit_all(rows, decays, moes)
    fit_dp4a(rows, cells, scores, requests)
    requests_tp = fit_requests_tp(every, cells, scores, devices, requests, moes)
    rpc = rpc_seconds()
    write(rows, cells, scores, devices, requests, decays, moes, requests_tp, rpc)


# Fit rows needed before a runtime's DP4A fraction is fitted.
MIN_DP4A_ROWS = 3


def dp4a_width_ratio(cells, runtime, r):
    """The factor on the DP4A fraction for a row's format (speed.rs
    dp4a_width_ratio): 1 but below 4 bits, where it is the pooled below-4-bit
    prefill cell over the pooled 4-to-8-bit one (1 where either is missing)."""
    if r["width"] != "<4-bit":
        return 1.0
    fine = cells.get(("any", runtime, "<4-bit"), {}).get("prefill")
    four = cells.get(("any", runtime, "4-7 bit"), {}).get("prefill")
    if fine is None or four is None or four[0] <= 0:
        return 1.0
    return fine[0] / four[0]


def fit_dp4a(rows, cells, scores, requests):
    """Per runtime, the fraction f of the DP4A rate the dp4a rows' prompts
    reach, with the pooled cell's per-layer prefill time (the DP4A MMQ
    kernels run on no class's tensor cores): least squares on the relative
    error, sum(((x / f + rest) / t - 1)^2), x the ideal time at the DP4A
    rate, closed form as device_factor. Sets DP4A_FRACTION."""
    for runtime in sorted({r["runtime"] for r in rows}):
        fit_rows = []
        for r in rows:
            if r["runtime"] != runtime or r["part"] != "fit" or not dp4a(r) or not r["pre"] or not r["pp"]:
                continue
            c = cells.get(("any", runtime, r["width"]), cells.get(("any", runtime, COARSER.get(r["width"], r["width"])), {})).get("prefill")
            if c is None:
                continue
            rest = (
                r["layers"] * c[1]
                + r["z"] * scores.get(runtime, 0.0)
                + r["inv_n"] * requests.get(runtime, 0.0)
                + wr(r, cells, {}, runtime)
            )
            # A format below 4 bits reaches the fraction times the pool's
            # ratio of its width's prefill cell to the 4-to-8-bit one
            # (speed.rs dp4a_width_ratio): its ideal time over that ratio.
            fit_rows.append((1.0 / r["pre"] * moe(r, {}) / dp4a_width_ratio(cells, runtime, r), rest, 1.0 / r["pp"]))
        if len(fit_rows) >= MIN_DP4A_ROWS:
            f = device_factor(fit_rows)
            if f is not None:
                DP4A_FRACTION[runtime] = (f, len(fit_rows))


# Pairs needed before the multi-machine term is derived.
MIN_RPC_PAIRS = 3


def calibration_rows(name):
    """The data rows of a calibration CSV as dicts (comment lines left out)."""
    import csv
    path = ROOT / "crates/ai-hwaccel/tests/calibration" / name
    lines = [l for l in path.read_text().splitlines() if l and not l.startswith("#")]
    return list(csv.DictReader(lines))


def notes_items(notes):
    return [i.strip() for i in re.split(r"[,;]", notes)]


def rpc_seconds():
    """Per runtime, (seconds per decode step, seconds per prompt token) each
    machine beyond the first adds under a multi-machine split, derived from
    published pairs: a split.csv row whose notes carry an item "rpc ..." (one
    model split by layers over m identical machines through llama.cpp's RPC
    backend) and the speed.csv row of the same source, model, format and
    test on one of those machines. At batch 1 a layer split runs its stages
    one after another, so on m machines a token takes the one machine's
    time plus what the network adds: (1/t_m - 1/t_1) / (m - 1). Prompts of
    one micro-batch (512 tokens or fewer) only, which llama.cpp cannot
    overlap over the stages. The median over the pairs, floored at 0; a
    runtime with fewer than MIN_RPC_PAIRS decode pairs gets none.
    Returns ({runtime: (step, token)}, pairs) with the pairs for the doc."""
    single = {}
    for r in calibration_rows("speed.csv"):
        for test, tok in (("tg", r["tg_tok_s"]), ("pp", r["pp_tok_s"])):
            if tok:
                n = r["tg_tokens"] if test == "tg" else r["pp_tokens"]
                key = (r["source"], r["runtime"], r["catalog_model"], r["format"], test, n)
                single[key] = float(tok)
    pairs = {}
    for r in calibration_rows("split.csv"):
        if not any(i.startswith("rpc") for i in notes_items(r["notes"])):
            continue
        m = int(r["gpus"])
        if m < 2:
            continue
        for test, tok in (("tg", r["tg_tok_s"]), ("pp", r["pp_tok_s"])):
            if not tok:
                continue
            n = r["tg_tokens"] if test == "tg" else r["pp_tokens"]
            if test == "pp" and (not n or int(n) > 512):
                continue
            key = (r["source"], r["runtime"], r["catalog_model"], r["format"], test, n)
            if key not in single:
                continue
            d = (1.0 / float(tok) - 1.0 / single[key]) / (m - 1)
            pairs.setdefault((r["runtime"], test), []).append(
                (d, r["device"], r["catalog_model"], r["format"], test + (n or ""), m,
                 float(tok), single[key]))
    out = {}
    for runtime in sorted({k[0] for k in pairs}):
        dec = sorted(p[0] for p in pairs.get((runtime, "tg"), []))
        pre = sorted(p[0] for p in pairs.get((runtime, "pp"), []))
        if len(dec) < MIN_RPC_PAIRS:
            continue

        def median(v):
            if not v:
                return 0.0
            k = len(v) // 2
            return v[k] if len(v) % 2 else (v[k - 1] + v[k]) / 2

        out[runtime] = (max(0.0, median(dec)), max(0.0, median(pre)))
    return out, pairs


def fit_requests_tp(every, cells, scores, devices, requests, moes):
    """Per runtime, the seconds a request served with tensor parallelism
    waits for its first token beyond what the single-device model gives
    (its prompt's prefill, with the all-reduces the planner counts, and the
    per-request time): the r >= 0 minimising sum(((e + r) / TTFT - 1)^2)
    over the runtime's tensor-parallel latency.csv fit rows, e the
    estimate, r = sum((TTFT - e) / TTFT^2) / sum(1 / TTFT^2). Everything
    else stays as fitted on the single-device rows."""
    out = {}
    for runtime in sorted({r["runtime"] for r in every}):
        num = den = 0.0
        for r in every:
            if (r["part"] != "fit" or r["runtime"] != runtime or r["tp"] <= 1
                    or not r["ttft_s"] or not r["pre"] or r["cls"] == "other"):
                continue
            c = cell_for(cells, runtime, r, "prefill")
            if c is None:
                continue
            eff, over, _ = c
            k = device_k(devices, r["spec_id"], runtime, "prefill")
            per_token = (
                (1.0 / r["pre"]) * moe(r, moes) / (eff * k)
                + r["layers"] * over
                + r["z"] * scores.get(runtime, 0.0)
                + wr(r, cells, devices, runtime)
            )
            e = r["input_len"] * per_token + requests.get(runtime, 0.0)
            t = r["ttft_s"]
            num += (t - e) / (t * t)
            den += 1.0 / (t * t)
        if den > 0 and num > 0:
            out[runtime] = num / den
    return out


def fit_all(rows, decays, moes):
    """Every cell, score, device factor and request time, with the
    build-date decay of each runtime (`decays`; none: 0)."""
    cells = {}
    scores = {}
    devices = {}
    requests = {}
    for runtime in sorted({r["runtime"] for r in rows}):
        # The pooled fit first: it fixes the bytes per attention score, a
        # property of the runtime's unfused attention, not of a class (the
        # device enters through its bandwidth in z).
        classes = sorted({r["cls"] for r in rows if r["cls"] and r["cls"] != "other"})
        for cls in ["any"] + classes:
            for q, ideal, meas in (("decode", "dec", "tg"), ("prefill", "pre", "pp")):
                samples = [
                    (r["width"],
                     1.0 / r[ideal] * moe(r, moes) * pera(r) if q == "prefill" else dec_x(r),
                     r["layers"] * (era(r, decays) if q == "decode" else 1.0),
                     r["z"] if q == "prefill" else 0.0,
                     1.0 / r[meas] - (dec_state(r) if q == "decode" else wr(r, cells, {}, runtime)),
                     r["inv_n"] if q == "prefill" else 0.0)
                    for r in rows
                    if r["part"] == "fit"
                    and r["runtime"] == runtime
                    and r[ideal]
                    and r[meas]
                    # DP4A prompts are fitted apart (dp4a).
                    and not (q == "prefill" and dp4a(r))
                    # The pool is the GPUs': host CPUs (cpu.csv) are a class
                    # apart and never pooled.
                    and (r["cls"] == cls or (cls == "any" and r["cls"] not in ("other", "cpu")))
                ]
                if not samples:
                    continue
                if cls != "any" and len({
                    r["spec_id"]
                    for r in rows
                    if r["part"] == "fit"
                    and r["runtime"] == runtime
                    and r["cls"] == cls
                    and r[ideal]
                    and r[meas]
                }) < MIN_CLASS_DEVICES:
                    continue
                # Coarse level: the widths below 8 bits pooled into one
                # ("<8-bit"); every cell it fits is kept. Fine level: each
                # width below 8 bits with enough rows gets its own
                # efficiency; only those cells are kept (16- and 8-bit come
                # from the coarse level). A format whose fine width has no
                # cell falls back to the coarse one (speed.rs `cells`).
                for level in ("coarse", "fine"):
                    if level == "coarse":
                        lv = [(COARSER.get(s[0], s[0]),) + s[1:] for s in samples]
                    else:
                        lv = samples
                    # The pooled coarse prefill fit also gives the bytes per
                    # score and the seconds per request, which the others
                    # then hold fixed.
                    pooled = q == "prefill" and cls == "any" and level == "coarse"
                    if q == "prefill":
                        score = None if pooled else scores.get(runtime, 0.0)
                        request = None if pooled else requests.get(runtime, 0.0)
                    else:
                        score = request = 0.0
                    res = fit(lv, score, request)
                    if res is None:
                        continue
                    a, c, sc, rq = res
                    if pooled:
                        scores[runtime] = sc
                        if rq > 0:
                            requests[runtime] = rq
                    for w, aw in a.items():
                        if level == "fine" and w not in COARSER:
                            continue
                        n = sum(1 for s in lv if s[0] == w)
                        cell = cells.setdefault((cls, runtime, w), {})
                        cell[q] = (1.0 / aw, c, n)

        for q, ideal, meas in (("decode", "dec", "tg"), ("prefill", "pre", "pp")):
            # One factor per chip (CHIP), named after its configuration
            # with the most rows in the quantity (ties: the first id).
            chips = {}
            for sid in {r["spec_id"] for r in rows if r["spec_id"]}:
                chips.setdefault(CHIP.get(sid, sid), set()).add(sid)
            for chip in sorted(chips, key=lambda c: sorted(chips[c])[0]):
                dev_rows = []
                count = {}
                for r in rows:
                    if r["part"] != "fit" or r["runtime"] != runtime or r["spec_id"] not in chips[chip]:
                        continue
                    c = cell_for(cells, runtime, r, q)
                    if not r[ideal] or not r[meas] or c is None or r["cls"] == "other":
                        continue
                    if q == "prefill" and dp4a(r):
                        continue
                    eff, over, _ = c
                    rest = (
                        r["layers"] * over * era(r, decays) + dec_state(r)
                        if q == "decode"
                        else r["layers"] * over
                        + r["z"] * scores.get(runtime, 0.0)
                        + r["inv_n"] * requests.get(runtime, 0.0)
                        + wr(r, cells, devices, runtime)
                    )
                    x = 1.0 / r[ideal] * moe(r, moes) * pera(r) if q == "prefill" else dec_x(r)
                    dev_rows.append((x / eff, rest, 1.0 / r[meas]))
                    count[r["spec_id"]] = count.get(r["spec_id"], 0) + 1
                if len(dev_rows) < MIN_DEVICE_ROWS:
                    continue
                k = device_factor(dev_rows)
                if k is not None:
                    sid = min(count, key=lambda i: (-count[i], i))
                    devices.setdefault((sid, runtime), {})[q] = (k, len(dev_rows))

    return cells, scores, devices, requests


def write(rows, cells, scores, devices, requests, decays, moes, requests_tp, rpc):
    def opt(v, fmtstr):
        return "None" if v is None else f"Some({v:{fmtstr}})"

    out = ["/// Fitted fractions (see the module documentation for how they are made).",
           "pub const FITTED: &[SpeedFit] = &["]
    for (cls, runtime, w) in sorted(cells, key=lambda k: (list(CLASSES).index(k[0]), k[1], list(WIDTHS).index(k[2]))):
        cell = cells[(cls, runtime, w)]
        d = cell.get("decode")
        p = cell.get("prefill")
        out.append("    SpeedFit {")
        out.append(f"        class: DeviceClass::{CLASSES[cls]},")
        out.append(f"        runtime: RuntimeKind::{RUNTIMES[runtime]},")
        out.append(f"        width: FormatWidth::{WIDTHS[w]},")
        out.append(f"        decode: {opt(d and d[0], '.4')},")
        out.append(f"        decode_layer_s: {opt(d and d[1], '.3e')},")
        out.append(f"        prefill: {opt(p and p[0], '.4')},")
        out.append(f"        prefill_layer_s: {opt(p and p[1], '.3e')},")
        out.append(f"        rows: ({d[2] if d else 0}, {p[2] if p else 0}),")
        out.append("    },")
    out.append("];")
    out.append("")
    out.append("/// Fitted bytes per attention score of each runtime's unfused attention.")
    out.append("pub const SCORE_BYTES: &[(RuntimeKind, f64)] = &[")
    for runtime, sc in sorted(scores.items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {sc:.3}),")
    out.append("];")
    out.append("")
    out.append("/// Fitted seconds each request spends beyond its prompt's prefill before")
    out.append("/// its first token (scheduling, the first decode step, detokenization), per")
    out.append("/// runtime.")
    out.append("pub const REQUEST_SECONDS: &[(RuntimeKind, f64)] = &[")
    for runtime, sec in sorted(requests.items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {sec:.4e}),")
    out.append("];")
    out.append("")
    out.append("/// Fitted further seconds a request served with tensor parallelism waits")
    out.append("/// for its first token, per runtime (fitted on tensor-parallel TTFT rows).")
    out.append("pub const REQUEST_SECONDS_TP: &[(RuntimeKind, f64)] = &[")
    for runtime, sec in sorted(requests_tp.items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {sec:.4e}),")
    out.append("];")
    out.append("")
    out.append("/// Seconds each further machine adds under a runtime's multi-machine split,")
    out.append("/// per decode step and per prompt token (derived from published pairs of")
    out.append("/// runs on one machine and on several).")
    out.append("pub const RPC_SECONDS: &[(RuntimeKind, f64, f64)] = &[")
    for runtime, (step, token) in sorted(rpc[0].items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {step:.4e}, {token:.4e}),")
    out.append("];")
    out.append("")
    out.append("/// Fitted fraction of the int8 DP4A rate a quantized prompt reaches on an")
    out.append("/// NVIDIA GPU without tensor cores but with DP4A ([`dp4a_mmq`]), per runtime,")
    out.append("/// with the fit rows behind it.")
    out.append("pub const PREFILL_DP4A: &[(RuntimeKind, f64, u32)] = &[")
    for runtime, (f, n) in sorted(DP4A_FRACTION.items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {f:.4}, {n}),")
    out.append("];")
    out.append("")
    out.append("/// Fitted factor on the prefill time of a mixture of experts' routed GEMMs,")
    out.append("/// per runtime.")
    out.append("pub const MOE_PREFILL: &[(RuntimeKind, f64)] = &[")
    for runtime, m in sorted((k, v) for k, v in moes.items() if isinstance(k, str)):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {m:.2}),")
    out.append("];")
    out.append("")
    out.append("/// Fitted factor on the prefill time of a mixture of experts' routed GEMMs,")
    out.append("/// per runtime and llama.cpp backend with enough rows of its own (else")
    out.append("/// [`MOE_PREFILL`]).")
    out.append("pub const MOE_PREFILL_BACKEND: &[(RuntimeKind, GgmlBackend, f64)] = &[")
    for (runtime, b), m in sorted((k, v) for k, v in moes.items() if not isinstance(k, str)):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, GgmlBackend::{RUST_BACKENDS[b]}, {m:.2}),")
    out.append("];")
    out.append("")
    out.extend(kv_read_lines(current_kv_reads()))
    out.append("")
    out.extend(eager_lines(current_eager()))
    out.append("")
    out.append("/// Fitted fraction of memory bandwidth at which a decode step reads and")
    out.append("/// rewrites the linear-attention layers' recurrent state, per runtime, with")
    out.append("/// its fit rows (`inference::linear_state_seconds`).")
    out.append("pub const LINEAR_STATE: &[(RuntimeKind, f64, u32)] = &[")
    for runtime, f in sorted(LINEAR_STATE.items()):
        out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {f:.3f}, {LINEAR_STATE_ROWS[runtime]}),")
    out.append("];")
    out.append("")
    out.append("/// Fitted build-date term of the per-layer decode time: per runtime and")
    out.append("/// device class, the decay per year and the newest and oldest build months")
    out.append("/// of the class's device group (NVIDIA, AMD, Apple, Intel) in the fit rows.")
    out.append("pub const DECODE_BUILD_DECAY: &[(RuntimeKind, DeviceClass, f64, BuildMonth, BuildMonth)] = &[")
    for (runtime, g), (d, m, lo) in sorted(decays.items()):
        for cls in CLASSES:
            if group(cls) != g:
                continue
            out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, DeviceClass::{CLASSES[cls]}, {d:.2f}, "
                       f"BuildMonth::ym({m // 12}, {m % 12 + 1}), BuildMonth::ym({lo // 12}, {lo % 12 + 1})),")
    out.append("];")
    out.append("")
    era_lines = [
        (
            "PREFILL_MMQ_ERA",
            MMQ_ERA,
            ["CUDA backend ran before MMQ on int8 tensor cores was its default",
             "([`LLAMA_CUDA_MMQ_INT8`]), per runtime."],
        ),
        (
            "PREFILL_VULKAN_AMD_ERA",
            VULKAN_AMD_ERA,
            ["Vulkan backend ran on an AMD GPU with cooperative matrices before",
             "[`LLAMA_VULKAN_AMD_COOPMAT_TUNING`] ([`vulkan_amd_untuned`]), per runtime."],
        ),
    ]
    for name, factors, doc in era_lines:
        out.append("/// Fitted factor on the prefill time of a quantized prompt that llama.cpp's")
        out.extend(f"/// {line}" for line in doc)
        out.append(f"pub const {name}: &[(RuntimeKind, f64)] = &[")
        for runtime, f in sorted(factors.items()):
            if f != 1.0:
                out.append(f"    (RuntimeKind::{RUNTIMES[runtime]}, {f:.2f}),")
        out.append("];")
        out.append("")
    out.append("/// Fitted factors of the devices with enough rows of their own.")
    out.append("#[allow(clippy::approx_constant)] // fitted values, not constants")
    out.append("pub const FITTED_DEVICES: &[DeviceFit] = &[")
    for (sid, runtime), d in sorted(devices.items()):
        dd = d.get("decode")
        pp = d.get("prefill")
        out.append("    DeviceFit {")
        out.append(f"        spec_id: \"{sid}\",")
        out.append(f"        runtime: RuntimeKind::{RUNTIMES[runtime]},")
        out.append(f"        decode: {opt(dd and dd[0], '.4')},")
        out.append(f"        prefill: {opt(pp and pp[0], '.4')},")
        out.append(f"        rows: ({dd[1] if dd else 0}, {pp[1] if pp else 0}),")
        out.append("    },")
    out.append("];")
    src = SPEED_RS.read_text()
    begin = "// BEGIN FITTED (generated by scripts/fit-speed.py; do not edit by hand)\n"
    end = "// END FITTED\n"
    i, j = src.index(begin) + len(begin), src.index(end)
    SPEED_RS.write_text(src[:i] + "\n".join(out) + "\n" + src[j:])
    # The repository's style (cargo fmt --check runs in CI).
    subprocess.run(["cargo", "fmt", "-p", "ai-hwaccel"], cwd=ROOT, check=True)
    kv_reads = fit_kv_reads()
    src = SPEED_RS.read_text()
    m = KV_READ_RE.search(src)
    doc = src.rfind("\n\n", 0, m.start()) + 2
    SPEED_RS.write_text(src[:doc] + "\n".join(kv_read_lines(kv_reads)) + src[m.end():])
    subprocess.run(["cargo", "fmt", "-p", "ai-hwaccel"], cwd=ROOT, check=True)
    eager = fit_eager()
    src = SPEED_RS.read_text()
    m = EAGER_RE.search(src)
    doc = src.rfind("\n\n", 0, m.start()) + 2
    SPEED_RS.write_text(src[:doc] + "\n".join(eager_lines(eager)) + src[m.end():])
    subprocess.run(["cargo", "fmt", "-p", "ai-hwaccel"], cwd=ROOT, check=True)
    for (cls, runtime, w), cell in sorted(cells.items()):
        print(cls, runtime, w, {k: (round(v[0], 4), f"{v[1]:.2e}", v[2]) for k, v in cell.items()})
    print("bytes per attention score", scores)
    print("seconds per request", requests)
    print("build-date decay per year", decays)
    print("MoE routed prefill factor", moes)
    print("prefill factor before int8 MMQ", MMQ_ERA)
    print("DP4A prefill fraction", DP4A_FRACTION)
    for key, d in sorted(devices.items()):
        print(key, {q: (round(v[0], 4), v[1]) for q, v in d.items()})

    write_accuracy()
    rc, text = cargo_test(["--nocapture", "--exact", "speed_estimates_against_published_measurements"])
    m = re.search(r"BEGIN TABLE\n(.*?)END TABLE", text, re.S)
    if not m:
        sys.exit(text)
    table = m.group(1)
    status = "passes" if rc == 0 else "FAILS"
    over = [
        f"{cls} {rt} {w} {q} ({v[0]:.3f})"
        for (cls, rt, w), cell in sorted(cells.items())
        for q, v in sorted(cell.items())
        if v[0] > 1.0
    ]
    above_one = (
        "- Fitted efficiencies above 1 ("
        + ", ".join(over)
        + "): with the per-layer overhead fitted beside them, the bytes or\n"
        "  FLOPs the planner counts overstate what the runtime moves or computes\n"
        "  there. They are not clamped.\n"
        if over
        else ""
    )
    decay_text = ", ".join(
        f"{g} {d:.2f} (builds {lo // 12}-{lo % 12 + 1:02d} to {m // 12}-{m % 12 + 1:02d})"
        for (_, g), (d, m, lo) in sorted(decays.items())
    )
    moe_text = ", ".join(
        f"{k} {m:.1f}" if isinstance(k, str) else f"{k[0]} on {PRINTED_BACKENDS[k[1]]} {m:.1f}"
        for k, m in sorted(moes.items(), key=lambda kv: (isinstance(kv[0], tuple), str(kv[0])))
    ) or "none"
    rc2, text2 = cargo_test(["--nocapture", "--exact", "layer_split_estimates_against_published_measurements"])
    split_lines = "".join(line + "\n" for line in text2.splitlines() if line.startswith("| several GPUs"))
    split_status = "passes" if rc2 == 0 else "FAILS"
    rc3, text3 = cargo_test(["--nocapture", "--exact", "cpu_rows_against_published_measurements"])
    cpu_lines = "".join(line + "\n" for line in text3.splitlines() if line.startswith("| CPUs"))
    cpu_status = "passes" if rc3 == 0 else "FAILS"
    rc4, text4 = cargo_test(["--nocapture", "--exact", "lent_h200_measurements_against_the_planner"])
    lent_lines = "".join(line + "\n" for line in text4.splitlines() if line.startswith("| lent H200"))
    lent_status = "passes" if rc4 == 0 else "FAILS"
    rc6, text6 = cargo_test(["--nocapture", "--exact", "lent_h100_measurements_against_the_planner"])
    h100_lines = "".join(line + "\n" for line in text6.splitlines() if line.startswith("| lent H100"))
    h100_status = "passes" if rc6 == 0 else "FAILS"
    rc5, text5 = cargo_test(["--nocapture", "--exact", "batch_rows_against_published_measurements"])
    def block(text, name):
        body = text.split(f"BEGIN {name}\n", 1)[1].split(f"\nEND {name}", 1)[0] if f"BEGIN {name}" in text else ""
        return "".join(line + "\n" for line in body.splitlines() if line.startswith("| "))
    batch_status = "passes" if rc5 == 0 else "FAILS"
    rc8, text8 = cargo_test(["--nocapture", "--exact", "depth_rows_against_published_measurements"])
    depth_status = "passes" if rc8 == 0 else "FAILS"
    rc9, text9 = cargo_test(["--nocapture", "--exact", "scoreboard_rows_against_published_measurements"])
    scoreboard_status = "passes" if rc9 == 0 else "FAILS"
    rc7, text7 = cargo_test(["--nocapture", "--exact", "batched_rows_against_published_measurements"])
    batched_status = "passes" if rc7 == 0 else "FAILS"
    rc10, text10 = cargo_test(["--nocapture", "--exact", "serving_rows_against_published_measurements"])
    serving_status = "passes" if rc10 == 0 else "FAILS"
    kv_text = ", ".join(
        f"{rt} {'fused' if fused else 'unfused'} {f:.2f}" for (rt, fused), f in sorted(kv_reads.items())
    ) or "none fitted"
    DOC.write_text(
        DOC_HEAD
        + table
        + DOC_TAIL.format(
            status=status,
            above_one=above_one,
            decays=decay_text,
            moes=moe_text,
            mmq_era=", ".join(f"{f:.2f}" for f in MMQ_ERA.values() if f != 1.0) or "1 (none fitted)",
            vulkan_amd_era=", ".join(f"{f:.2f}" for f in VULKAN_AMD_ERA.values() if f != 1.0)
            or "1 (none fitted)",
            linear_state=", ".join(
                f"{rt} {f:.3f} ({LINEAR_STATE_ROWS[rt]} fit rows)" for rt, f in sorted(LINEAR_STATE.items())
            ) or "none fitted",
        )
        + DOC_SPLIT.format(status=split_status, lines=split_lines)
        + rpc_doc(rpc)
        + DOC_CPU.format(status=cpu_status, lines=cpu_lines)
        + DOC_LENT.format(status=lent_status, lines=lent_lines)
        + DOC_LENT_H100.format(status=h100_status, lines=h100_lines)
        + DOC_BATCH.format(
            status=batch_status,
            summary=block(text5, "BATCH SUMMARY"),
            rows=block(text5, "BATCH TABLE"),
        )
        + DOC_SERVING.format(
            status=serving_status,
            summary=block(text10, "SERVING SUMMARY"),
            rows=block(text10, "SERVING TABLE"),
        )
        + DOC_BATCHED.format(
            status=batched_status,
            kv_reads=kv_text,
            summary=block(text7, "BATCHED SUMMARY"),
            rows=block(text7, "BATCHED TABLE"),
        )
        + DOC_DEPTH.format(
            status=depth_status,
            summary=block(text8, "DEPTH SUMMARY"),
            rows=block(text8, "DEPTH TABLE"),
        )
        + DOC_SCOREBOARD.format(
            mmq_era=", ".join(f"{f:.2f}" for f in MMQ_ERA.values() if f != 1.0) or "1 (none fitted)",
            dp4a=", ".join(f"{rt} {f:.3f} ({n} rows)" for rt, (f, n) in sorted(DP4A_FRACTION.items()))
            or "none fitted",
            status=scoreboard_status,
            summary=block(text9, "SCOREBOARD SUMMARY"),
            rows=block(text9, "SCOREBOARD TABLE"),
        )
    )
    print(table)
    print("accuracy test", status)


ACCURACY_RE = re.compile(r"// BEGIN ACCURACY.*?// END ACCURACY", re.S)


def rust_f64(text):
    """A printed number as a Rust f64 literal (`1` is `1.0`)."""
    return text if ("." in text or "e" in text) else text + ".0"


def write_accuracy():
    """speed.rs ACCURACY: the planner's error per runtime, device class and
    quantity on the calibration rows, as the accuracy test computes it with
    the constants just written (its block "BEGIN ACCURACY"; the test fails
    until the constant matches, so its exit status is not read here)."""
    _, text = cargo_test(["--nocapture", "--exact", "the_accuracy_table_is_the_calibration_errors"])

    def block(name, key):
        """The Rust entries of the test's block `name`: one per line, its
        second field written by `key` (a device class or a spec id)."""
        m = re.search(rf"BEGIN {name}\n(.*?)END {name}", text, re.S)
        if not m:
            sys.exit(text)
        out = []
        for line in m.group(1).splitlines():
            rt, k, prefill, rows, median, worst, held_rows, held_median = line.split("\t")
            held = f"Some({rust_f64(held_median)})" if held_median else "None"
            out.append(
                f"    (RuntimeKind::{RUNTIMES[rt]}, {key(k)}, {prefill}, "
                f"Accuracy {{ rows: {rows}, median: {rust_f64(median)}, worst: {rust_f64(worst)}, "
                f"held_out_rows: {held_rows}, held_out_median: {held} }}),"
            )
        return out

    entries = block("ACCURACY", lambda c: f"DeviceClass::{CLASSES[c]}")
    # The `not fitted` latency.csv rows, per runtime and device (spec id).
    device_entries = block("DEVICE ACCURACY", lambda sid: f'"{sid}"')
    # Every run of each device, per runtime and backend ("backend|spec id").
    run_entries = block(
        "DEVICE RUNS",
        lambda key: ", ".join(f'"{part}"' for part in key.split("|", 1)),
    )
    # serving.csv's served TPOT per runtime: the key and quantity fields
    # are fixed ("served_tpot", decode) and left out of the constant.
    # The closed loop's mean TTFT is the same rows' prefill slot ("true").
    serving_block = block("SERVING ACCURACY", lambda _: "SERVED_TPOT")
    serving_entries = [
        e.replace(", SERVED_TPOT, false, ", ", ")
        for e in serving_block
        if ", SERVED_TPOT, false, " in e
    ]
    serving_ttft_entries = [
        e.replace(", SERVED_TPOT, true, ", ", ")
        for e in serving_block
        if ", SERVED_TPOT, true, " in e
    ]
    const = (
        "// BEGIN ACCURACY (generated by scripts/fit-speed.py; do not edit by hand)\n"
        "/// Per runtime, device class and quantity (`true`: prefill), the\n"
        "/// planner's error on the class's published measurements ([`Accuracy`]).\n"
        "pub const ACCURACY: &[(RuntimeKind, DeviceClass, bool, Accuracy)] = &[\n"
        + "\n".join(entries)
        + "\n];\n"
        "/// Per runtime, device (spec id) and quantity, the planner's error on the\n"
        "/// device's own published runs that the fit does not take\n"
        "/// ([`FitBasis::device_accuracy`]); every one of them is held out.\n"
        "pub const DEVICE_ACCURACY: &[(RuntimeKind, &str, bool, Accuracy)] = &[\n"
        + "\n".join(device_entries)
        + "\n];\n"
        "/// Per runtime, the planner's served time per output token\n"
        "/// (`Plan::served_tpot_ms`) against the published closed-loop serving\n"
        "/// benchmarks of `tests/calibration/serving.csv`, compared, never fitted:\n"
        "/// every run is held out.\n"
        "pub const SERVING_ACCURACY: &[(RuntimeKind, Accuracy)] = &[\n"
        + "\n".join(serving_entries)
        + "\n];\n"
        "/// Per runtime, the planner's mean time to first token of a closed-loop\n"
        "/// benchmark (`inference::closed_loop_ttft_ms`: the clients' first burst,\n"
        "/// then `Plan::served_ttft_ms`) against the same runs' printed mean,\n"
        "/// compared, never fitted: every run is held out.\n"
        "pub const SERVING_TTFT_ACCURACY: &[(RuntimeKind, Accuracy)] = &[\n"
        + "\n".join(serving_ttft_entries)
        + "\n];\n"
        "/// Per runtime, ggml backend (llama.cpp's, as llama-bench prints it; empty\n"
        "/// for the serving runtimes), device (spec id) and quantity, the planner's\n"
        "/// error on every published run of the device ([`FitBasis::device_runs`]).\n"
        "#[rustfmt::skip]\n"
        "pub const DEVICE_RUNS: &[(RuntimeKind, &str, &str, bool, Accuracy)] = &[\n"
        + "\n".join(run_entries)
        + "\n];\n// END ACCURACY"
    )
    src = SPEED_RS.read_text()
    if not ACCURACY_RE.search(src):
        sys.exit("speed.rs has no ACCURACY block")
    SPEED_RS.write_text(ACCURACY_RE.sub(lambda _: const, src, count=1))
    subprocess.run(["cargo", "fmt", "-p", "ai-hwaccel"], cwd=ROOT, check=True)


def rpc_doc(rpc):
    """The section on splits over machines: every pair behind RPC_SECONDS."""
    values, pairs = rpc
    rows = []
    for (runtime, test), ps in sorted(pairs.items()):
        for d, device, model, fmt, t, m, tok_m, tok_1 in ps:
            rows.append(
                f"| {runtime} | {device} | {model} {fmt} | {t} | {m} | {tok_1:g} | {tok_m:g} | {d * 1e3:.3f} |"
            )
    if not rows:
        return DOC_RPC.format(
            table="No split.csv row is marked `rpc` with a one-machine row of the same source.\n",
            values="none: multi-machine plans add no network time",
        )
    text = ", ".join(
        f"{rt}: {step * 1e3:.3f} ms per decode step and {token * 1e3:.4f} ms per prompt token"
        for rt, (step, token) in sorted(values.items())
    ) or f"none (fewer than {MIN_RPC_PAIRS} decode pairs)"
    table = (
        "| runtime | device (each machine) | model | test | machines | t/s on one | t/s on all | ms per further machine |\n"
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n"
        + "\n".join(rows)
        + "\n"
    )
    return DOC_RPC.format(table=table, values=text)


DOC_RPC = """
## Several machines: llama.cpp's RPC backend

A layer split over machines (two GB10s or Mac Studios, a cluster of
Framework Desktops: `machine` in the plan's devices) runs over llama.cpp's
RPC backend: `--rpc` on the machine that runs the server, `ggml-rpc-server`
on the others (the emitted command says so). Its network round trips and
activation copies cost each further machine the same per decode step and
per prompt token, derived from published pairs of runs (split.csv rows
marked `rpc`, against the speed.csv row of the same source, model, format
and test on one of the machines): at batch 1 a layer split runs its stages
one after another, so `(1/t_m − 1/t_1) / (m − 1)` is what the network adds
per further machine; prompts of one micro-batch only (up to 512 tokens,
which llama.cpp cannot overlap over the stages). `RPC_SECONDS`
(`src/plan/speed.rs`) is the median over the pairs (at least
three decode pairs): {values}. The networks differ (Thunderbolt,
10 GbE, 5 GbE) and one figure covers them.

{table}"""


DOC_HEAD = """# Speed accuracy

Generated by `scripts/fit-speed.py` (do not edit by hand): the planner's decode
and prefill tokens/s against every row of
[`crates/ai-hwaccel/tests/calibration/speed.csv`](../crates/ai-hwaccel/tests/calibration/speed.csv),
published measurements at batch 1 with one source URL per row, numbers as
printed. The test is `crates/ai-hwaccel/tests/accuracy.rs`; the model and the
fit are described in `crates/ai-hwaccel/src/plan/speed.rs`.

Error: |estimate ÷ measured − 1|. "fit": rows the constants were fitted on;
"held-out": the fifth of the rows (FNV-1a 64 of the CSV line, 0 mod 5) the fit
never saw. Goals (issue 16): decode median ≤ 12 %, worst ≤ 40 %; prefill
median ≤ 25 %, worst ≤ 60 %; ≥ 90 % of rows estimated.

A plan carries its device class's figures with its fitted fractions
(`speed_basis.decode.accuracy` and `speed_basis.prefill.accuracy` in the
JSON, a line under each fraction in the table) under the plan's runtime:
the class's fit and held-out rows together, with the held-out rows'
median apart (for vLLM, SGLang and TensorRT-LLM their speed.csv rows
and latency.csv's read as rates; the `ACCURACY` table in
`src/plan/speed.rs`, written by the script from the accuracy test's own
computation, which the test holds it to). Where the corpus has runs of
the device itself under the runtime (and, for llama.cpp, the plan's
backend), the plan carries their figures too (`device_runs`, the
`DEVICE_RUNS` table, a second line in the table), and warns when their
median error passes the worst error aimed at (40 % decode, 60 %
prefill): today the RTX 2080 Ti's Vulkan prompts under llama.cpp and
four devices' vLLM single-request runs (the H200's decode, the L4's,
RTX 4090's and T4's time to first token).

The lines by class and format, and the goals, cover the llama.cpp rows (the
tokens/s corpus the goals were stated for). A runtime without fitted cells
of its own ("not fitted": SGLang, TensorRT-LLM) is estimated with vLLM's
cells (`fit_runtime` in `src/plan/speed.rs`: the same kind of serving
engine), with fused attention and on the row's tensor-parallel degree; its
line ("all (unfitted)") is what those cells achieve on rows no fit saw. A
format width no row of a runtime measures (vLLM's FP8 and FP4) takes the
runtime's 16-bit cells.

The "latency.csv" lines compare the plan's time per output token (decode
columns) and time to first token (prefill columns) with single-request
medians published by FreedomIntelligence/AccelMark (interactive scenario:
one request at a time) in
[`crates/ai-hwaccel/tests/calibration/latency.csv`](../crates/ai-hwaccel/tests/calibration/latency.csv).
The fit reads those rows as 1000 / TPOT decode tokens/s and 1000 × prompt /
TTFT prefill tokens/s (a computation in `scripts/fit-speed.py`, the data as
printed), under the same held-out rule.

"""

DOC_TAIL = """
The test {status}. It asserts the goals where they are met and, where not,
what is achieved (constants `ACHIEVED_*` in `tests/accuracy.rs`).

## What limits the figures

- Device factors ("device factor" in `src/plan/speed.rs`) are fitted for
  the spec entries with at least four fit rows of their own; they are what
  brings the M1 Max rows (the M1 Max reaches about 45 % of its datasheet
  400 GB/s in decode, the M2 Ultra over 60 % of its 800 GB/s) within the
  goals. Devices without rows of their own use their class's cell alone,
  so the held-out rows of devices that have factors say more about those
  devices than about a card the corpus has never seen.
- Widths below 8 bits are split at 4 bits ("4-7 bit", "<4-bit" in the
  table; `FormatWidth` in `src/plan/speed.rs`), with the coarser "<8-bit"
  cells kept as the fallback. The "<4-bit" cells (Q3_K, Q2_K) rest on few
  rows: the RTX 3090's llama 7B Q2_K and Q3_K_S (PR 4766's baseline, 92.69
  and 87.26 tok/s), the RTX 4070's llama 8B Q2_K (PR 10459's baseline,
  Vulkan, 59.12 tok/s) and, held out, the 30-core M2 Max's llama 7B Q3_K_S
  (PR 2995's baseline, 44.52 tok/s; its Q4_0 decodes at 61.22 reading more
  bytes, PR 2959); since Nov 2026 also the RTX 5090's Q2_K decode on
  Vulkan (PRs 17675 and 16641, Oct-Dec 2025 builds: Llama 3.2 1B, Qwen2.5
  7B, Qwen3 30B-A3B). llama.cpp's 2- and 3-bit kernels of 2023-2024 reach
  about half the bandwidth of its 4-bit ones on the same card; the 2025
  rows run far closer to it, and the pooled "<4-bit" cell (bandwidth
  fraction 0.39 before them, 0.58 with them) put the M2 Max's Sep 2023
  Q3_K_S row 59 % over: no Apple row below 4 bits is fitted, and Apple has
  no build-date term to age it (below). A class without a cell of its own
  at the finest width but with one at the coarser width now takes that
  cell, its efficiency scaled by the pooled ratio of the finest to the
  coarser width (`width_scaled` in `src/plan/speed.rs`): the class's
  kernels and the format's unpacking as separate factors, each from its
  own evidence. The M2 Max row is then 17 % over (Apple's "<8-bit" cell ×
  the pooled "<4-bit" / "<8-bit" ratio), and the RX 6800's llama 8B Q3_K_S
  pp2048 (ROCm) 11 % over instead of 63 %.
- The i-quants below IQ4 (IQ3_M to IQ1_S, planned since Nov 30, 2026) are
  planned on the same "<4-bit" cells, and no row of the corpus is one. Their
  weights are exact (`crates/ai-hwaccel-cli/tests/llamacpp.rs` quantizes
  with the real llama-quantize and llama-imatrix; `tests/calibration/weights.csv`
  has three published Llama-3-8B sizes within 1 %), but their decode is not
  calibrated: llama.cpp's i-quant kernels are bound by their arithmetic on
  many GPUs. PR 8215's table (July 2024, llama 8B, `-ub 1`: one token per
  forward pass) has an RTX 3090 at 143.17, 151.47 and 167.03 tok/s for
  IQ3_S, IQ2_S and IQ1_M (3.42 to 2.01 GiB of weights, nearly flat), an
  RTX 4090 at 221.34, 276.89 and 315.04 and an RX 6800 at 38.16, 46.31 and
  49.22, where the planner at that build says 97-144, 110-159 and 67-91:
  the 3090 and the RX 6800 are bound by their arithmetic (a token's time
  is 27 to 31 and 41 to 53 of their datasheet FP32 operations per weight,
  35.6 and 16.17 TFLOPS), the 4090 by its bandwidth (its IQ3_S to IQ1_M
  tokens read their weights at 0.81 to 0.67 of its 1008 GB/s). A plan at these levels
  warns so (`I_QUANT_DECODE_UNCALIBRATED` in `src/plan/inference.rs`);
  modelling the arithmetic bound needs more rows than that one table's
  excerpts give.
- Build date: llama.cpp's per-token time beyond the bytes has fallen
  build by build (CUDA graphs since spring 2024, PR 6766; op fusion in
  2025), so each llama.cpp row is dated (`tests/calibration/builds.csv`)
  and the per-layer decode time scales as `exp(decay × age)` before the
  newest build of the row's vendor group ("Build date" in
  `src/plan/speed.rs`). Fitted decays per year: {decays}. Apple's rows are
  all of Sep 2023 to May 2024 builds but one (an M3 Ultra, Dec 2025), too
  few to fit a decay on, so Apple plans keep the fitted per-layer time of
  those builds. Intel's rows have had none since Nov 2026: their newest
  build is now PR 28725's of Sep 2026 (an A770 under SYCL), and only two
  Intel rows are of builds in the year before it (the rule asks for three;
  0.35 per year was fitted on the Feb 2025 to Apr 2026 builds before), so
  Intel plans take the per-layer time fitted over all their rows' builds.
  Without the term the decode worst was 58 % (the MI300X's
  Oct 2024 rows) and the lent H200 below decoded 31 to 41 % faster than
  planned. llama.cpp never used CUDA graphs below compute capability 8.0
  until PR 25749 (opened 2026-07-16) enabled them on Volta and Turing;
  Pascal still runs without (PR 27721, open in Aug 2026, measured a GTX
  1080's tg64 at 41.47 tok/s without and 73.85 with). So since Nov 2026 a
  row or plan on such a GPU under CUDA takes the per-layer time of the
  last build before graphs, April 2024 (`without_cuda_graphs`,
  `decode_build` in `src/plan/speed.rs`; the fit does the same,
  `decode_month`): the scoreboards' Turing decode rows went from 1 % under
  to 45 % over (median 23 %) to 10 % under to 32 % over (median 6 %), and
  the Pascal ones from 15-52 % over to 1 % under to 38 % over (the
  Titan Xp and Tesla P40 within 2 %).
- Mixture-of-experts prefill: the routed experts' GEMMs (a few tokens
  per expert per micro-batch) run at their own fraction of the matrix
  rate, a factor on their prefill time fitted per runtime, and per
  llama.cpp backend with three fit rows of its own (its `mul_mat_id`
  kernels; "Mixture-of-experts prefill" in `src/plan/speed.rs`): {moes}.
  One factor per runtime took the first MoE prompt rows (gpt-oss 20B on
  an RTX 3090, Qwen3 30B-A3B on the RTX PRO 6000, gpt-oss 20B/120B and
  Qwen3 30B-A3B on the GB10) from 41-115 % over to -19..+29 %; with the
  rows added since (the RX 7900 XTX's gpt-oss 20B on ROCm, the RTX 5090's
  and RTX 3090's Vulkan runs) it split by backend: every CUDA MoE prompt
  was 26-82 % over, both ROCm ones 24-32 % under. Per backend the CUDA
  rows are within -14..+25 % (the held-out GB10 Qwen3 30B-A3B Q8_0 2 %
  under, 50 % over before), the Vulkan ones -13..+25 % but the RTX 5090's
  Aug 2025 Qwen3 30B-A3B Q4_K_M (126 % over, where its Q2_K run of the
  same build is 5 % over); ROCm, with two rows, keeps the runtime's
  factor (28-37 % under).
  Since Nov 29, 2026 a llama.cpp prompt also pays for reading, once per
  micro-batch (`-ub`, 512 by default; `plan --ubatch`), every expert its
  tokens route to (uniform top-k: `1 - (1 - k/E)^n` of them for `n`
  tokens), at the device's decode fraction of the bandwidth, spread over
  the micro-batch (`inference::prompt_pass_weight_seconds`; the fit takes
  it from the ideal rows' `wread` column, full-bandwidth seconds over the
  row's decode fraction). An expert's GEMM over the few tokens routed to
  it reads its whole matrix for them: 16 tokens an expert for
  gpt-oss-120b (128 experts, 4 a token) in a 512-token micro-batch, 32
  for Qwen3 30B-A3B, 64 for gpt-oss 20B. The factors each fit row needed
  came closer together: CUDA 2.9-5.8 without the term, 2.5-4.0 with it
  (tokens per expert from 256 to 32). With it the fitted factors are
  CUDA 2.9, Vulkan 2.7 and ROCm 1.4 (3.6, 3.2 and 1.7 before). The rows
  it moved most:
  - the ROCm 7.2 Strix Halo Qwen3 30B-A3B Q4_K_M, 66 % to 41 % over (the
    worst fit prompt until then);
  - the RTX PRO 6000's Qwen3 30B-A3B, 29 % to 15 %;
  - the GB10's gpt-oss-120b pp2048 at `-ub 2048`, 13 % to 0 %;
  - the compared, not fitted linear-attention models, whose 512 experts
    take 10 tokens each: Qwen3-Next 80B-A3B on Strix Halo 224 % and 133 %
    to 94 % and 64 % over, Qwen3.5 35B-A3B 58 % to 31 %.
  Dense rows moved by up to 4 points through the refitted cells (the
  held-out GB10 Qwen2.5-Coder 7B Q8_0 pp2048 from 46 % to 50 % over).
  The serving engines put several requests' prompts in one pass whose
  size a single request's rate does not know, so vLLM, SGLang and
  TensorRT-LLM plans do not take the term yet. Applied to them it took
  SGLang's single-request TTFT worst from 73 % to 65 %, but its median
  from 23 % to 33 %. It also pushed several serving closed loops at high
  concurrency far over (Llama 4 Maverick on 8 MI300X at 93 requests,
  56 % to 207 %), where a pass holds many requests' prompts.
- Decode, worst rows: the RTX 4090's Qwen3 30B-A3B Q4_0 tg128 (PR 16834's
  master column, Oct 2025, 161.55 tok/s, 39 % over since the Nov 2026
  refits), the Data Center GPU Max 1100's llama-2-7b Q4_K_M
  (PR 12972, SYCL, 38.98 tok/s, 34 % over) and the Arc A770's Gemma 2 2B
  Q4_K_M on Vulkan (PR 14001's Windows baseline, held out, 35 % under);
  the MI300X's llama-2-7b Q4_0 tg128 (lhl, Oct 2024 build: 157.84 tok/s
  with `fa 1`, 183.18 without) is within 14 %. Held out, the 30-core M2
  Max's llama 7B Q3_K_S (Sep 2023) is 17 % over, as above. The A30's qwen3-8b Q5_K_M
  tg128 (Dec 2025, 75.79 tok/s, 28 % over) was built with
  `GGML_CUDA_GRAPHS:BOOL=OFF` (its source prints the build configuration),
  so it pays a kernel launch per operation that default builds do not.
- Prefill, held out: the Data Center GPU Max 1100's llama 7B Q4_0 pp512
  (PR 12972, SYCL, 1751.95 tok/s, 115 % over, where the same build's
  Q4_K_M row runs at 3369.32, 12 % over), the held-out worst until Nov 29,
  2026, is now compared, not fitted (the line "prompts of builds with slow
  kernels" above). Its build is of the weeks in which SYCL's Q4_0
  "reorder" layout, on by default from PR 12035 (February 2025) until PR
  12560 (2025-03-25) and again from PR 13003 (April 2025), also fed the
  prompt GEMMs: PR 13536 (opened 2025-05-14) says "The reorder
  optimisation introduced a prompt processing performance regression for
  Q4_0 models" and took the prompt path off it. Build 5376 is of the day
  that PR was opened. The PR's own regressed figures were not readable, so
  the planner has no term for the window; a plan for a build in it warns
  that its prefill is an upper bound. The held-out worst is now the GB10's
  Qwen2.5-Coder 7B Q8_0 pp2048 below. The Intel prefill cell
  is fitted on five SYCL rows of the Arc A770, Arc A750 and Max 1100
  (within 11 %) since the Intel entries carry XMX rates (Nov 2026; each
  entry's notes give the formula). Each row is planned on the ggml backend
  it printed (`InferenceOptions::backend`, `plan --backend`): llama.cpp's
  Vulkan backend multiplies on an Intel GPU's matrix engines only from Xe2
  (`ggml_vk_khr_cooperative_matrix_support` in
  `ggml/src/ggml-vulkan/ggml-vulkan.cpp`: "older hardware (ex. Arc A770)
  has performance regressions"), so the A770's held-out Vulkan rows are
  referred to its vector engines' 16-bit rate (34.4 TFLOPS against the
  XMX engines' 137.6): PR 14001's Windows baseline, Gemma 2 2B Q4_K_M
  pp512, 974.92 tok/s, is 23 % over and intel/ipex-llm issue 13309's llama
  7B Q4_0 pp512, 903.49, 46 % under (305 % and 93 % over on the XMX rate).
  Before the Intel entries had rates, Intel rows had no prefill estimate.
- Prefill, the MI300X's runs above (pp512 1272.03 and 1334.37 tok/s, fit):
  79-88 % over and the worst rows until Nov 2026, 7-12 % over since Nov 29,
  2026 (below). The llama.cpp of that time ran
  them without the matrix cores: its `ggml_cuda_should_use_mmq`
  (`ggml/src/ggml-cuda/mmq.cu` as vendored in llama-cpp-python 0.3.1,
  October 2024) returns `cc < CC_RDNA3 || ne11 < MMQ_DP4A_MAX_BATCH_SIZE`
  for every AMD GPU, and gfx942's compute capability is below RDNA3's, so
  quantized prompts ran its DP4A MMQ kernels on the vector units at every
  batch until PR 11601 (February 2025) sent CDNA's to rocBLAS. Since Nov
  2026 a CDNA GPU's quantized prompt of a build before February 2025 is
  planned at AMD's per-lane vector FP32 rate (`cdna_vector_ratio` in
  `src/plan/speed.rs`, AMD's per-CU tables: an eighth of the matrix FP16
  rate on CDNA 1 and 2; a sixteenth on CDNA 3, whose printed "Vector FP32"
  of 256 FLOPS per clock per CU is CDNA 2's "Packed FP32", beside a vector
  FP64 of 128, so the MI300X's vector rate for these kernels is 81.7
  TFLOPS, not 163.4). At the packed rate these rows were 148-161 % over;
  at the per-lane rate, with PR 8082's MI100 row of the same era (June
  2024 master, DP4A MMQ: Mistral 7B Q4_K_M pp1024, 585.58 tok/s, 2 % under)
  in the fit, 79-88 % over: the amd-datacenter cell they shared with the
  MI50 (DP4A MMQ on GCN) and MI100 (DP4A MMQ, rocBLAS and MFMA MMQ) rows
  reached more of the reference than the MI300X's build did (its
  `ggml_cuda_dp4a` had no native int8 dot for gfx942:
  `__builtin_amdgcn_sdot4` only for gfx906, gfx908, gfx90a and RDNA2).
  Two of those MI100 rows, PR 22051's llama 8B IQ4_NL and IQ4_XS pp512
  (April 2026 master, 3158.92 and 3176.73 tok/s, about twice the same
  GPU's rocBLAS prompts of July 2025), ran a build with
  `GGML_CUDA_FORCE_MMQ`: at the PR's base `ggml_cuda_should_use_mmq` sends
  those types' micro-batches above 128 tokens to rocBLAS on CDNA 1, yet
  the PR, which changed only the MMQ and MMA kernels, printed speedups at
  micro-batches 256 and 512 (IQ1_S: 1.16 and 1.06), so both its columns
  ran MMQ. Since Nov 29, 2026 such rows are compared, not fitted (the
  table's line "prompts forced onto MMQ where the default takes rocBLAS",
  `forced_mmq_unmodelled` in `src/plan/speed.rs`; a plan with
  `--cuda-force-mmq` there warns that it is planned as the default build).
  Without them the MI100 has three fit prompt rows, under the four a
  device factor takes, and the amd-datacenter prefill cell went from a
  median of 50.3 % and a worst of 104.5 % to 17.1 % and 44.7 %: the
  MI300X's rows 7-12 % over, the MI100's rocBLAS rows 22 % under (PR
  14624's llama 7B Q4_0 pp4096) and 19 % over (PR 14949's llama 13B
  Q5_K_M pp1024, 850.12 tok/s, 105 % over before), the MI50's IQ4 pp1024
  rows (PR 27841's baseline) 44-45 % over. The forced rows are 55-56 %
  under the default build's plan. The multi-GPU amd-datacenter prompts
  ("Layer split" below) went from a median of 340 % to 79 %: AMD's
  DeepSeek V3 prompts over eight MI300X from 4-13 times the measured rate
  to 2-6 times, while its Llama 3.1 70B Q4_K_M prompts (builds of
  September and October 2025, MFMA MMQ, the default path on CDNA 3) went
  from 32-51 % over to 47-49 % under. The cell is now fitted on rows of
  older kernel paths only (the MI300X's DP4A MMQ of Oct 2024, the MI100's
  rocBLAS and DP4A MMQ, the MI50's GCN MMQ), and its per-layer prompt time
  (16.1 µs per layer and token) is no physical constant of a current
  MI300X: it caps a current build's 8B prompt on one MI300X near 1,900
  tok/s. No single-GPU prompt row of a current CDNA 3 build is in the
  corpus (the forced MI100 rows ran the MFMA MMQ kernels that CDNA 3 runs
  by default, but on CDNA 1, where the default build does not), so plans
  for current MI300X, MI325X and MI355X prompts under llama.cpp rest on
  that cell and the multi-GPU comparison above.
- Prefill, the worst fit rows: the RTX 2080 Ti's on Vulkan (geerlingguy,
  Dec 2025, one Intel Core Ultra 265K desktop): TinyLlama 1.1B Q4_K_M
  pp512, 7094.19 ± 32.69 tok/s, 138.5 % over, and Llama 3.2 3B Q4_K_M
  pp512, 4418.37 ± 513.04, 60 % over (63.5 % before TinyLlama's rows
  joined the fit on Nov 29, 2026). The same block's TinyLlama tg128 is
  4 % over, so the card's bandwidth and the model are right; its prompts
  run at about half the Vulkan rate the other NVIDIA cards' rows fit.
  The same TinyLlama prompt is 31 % over on an RTX 3060 (Vulkan, a
  Raspberry Pi CM5 host) and 6 % over on the Radeon 8060S, so the gap
  is the GPU's, not the model's size alone. Which Vulkan matrix path a
  Turing card takes depends on its driver (`ggml-vulkan.cpp` quantizes
  the activations for its int8-dot-product shaders unless the device
  has `VK_NV_cooperative_matrix2`), which the print does not show. The
  scoreboards' Turing CUDA prompts, compared, are also 12-45 % over. The
  corpus has no other Turing prompt row in its fit to choose a term of
  their own on: a search of public llama-bench outputs found one more,
  an RTX 2060 of November 2023. The Ryzen AI Max+ 395's Qwen3 30B-A3B
  Q4_K_M pp512 under ROCm 7.2 (visorcraft's EVO-X2, Feb 2026, 1098 tok/s)
  was the other one, 66 % over, until its micro-batch's expert reads
  were planned (41 % over since, above). kyuz0/amd-strix-halo-toolboxes'
  logs show what else that machine's prompts depend on, which the corpus
  does not take yet:
  - ROCm 7.2 runs Q4_0 and MXFP4 prompts about 3x slower than ROCm 6.4.4
    on the same day's build: gpt-oss 20B pp512 548.07 against 1776.02
    tok/s (ROCm/rocm-systems issue 2865);
  - 16-bit experts take ggml-cuda's per-expert loop: Qwen3 30B-A3B BF16
    pp512 576.12 tok/s, several times under the plan;
  - before PR 18749 (January 2026) the Vulkan prompts on this 40-CU APU
    are not slower, which the pre-tuning factor says they are.
- Prefill, other rows: the GB10's dense Qwen2.5-Coder 7B Q8_0 pp2048
  (llama.cpp's own benches/dgx-spark.md, Nov 2025, `-ub 2048`, `fa 1`,
  held out: 2276.28 tok/s, 46 % over, 75 % when first written; the spec entry's 125 TFLOPS fp16 is
  NVIDIA's sparse FP4 petaflop halved and scaled by Blackwell's FP4 : FP16
  ratio, no measured or stated 16-bit rate, and the class takes the
  pooled 8-bit prefill cell, which the Radeon 8060S's Q8_0 rows joined in
  the Nov 2026 refits, 25 % to 113 % over as they moved); the RX 5700 XT's llama 7B
  Q4_0 pp512 under ROCm (a comment in PR 5835, Mar 2024, 318.71 tok/s,
  49 % over; the same card on Vulkan in May 2025, PR 13324, prints
  468.06, 4 % under): RDNA 1 has no matrix instructions and rests on the Radeon
  cell; the RTX 5090's Qwen3 30B-A3B Q4_K_M pp512 on Vulkan (PR 15252's
  baseline, Aug 2025, 3971.06 tok/s, 132 % over: mixture-of-experts
  prompts on Vulkan before the mul_mat_id work of PRs 15427, 15524 and
  later; compared, not fitted since Nov 29, 2026, with the card's other
  Vulkan prompts of August 2025, as the line "prompts of builds with slow
  kernels" above says; the same card's gpt-oss 20B pp512 on Vulkan rose
  from 7622.73 tok/s in Aug 2025 to 10026.81 in Dec 2025, and under
  KHR_coopmat instead of NVIDIA's coopmat2 extension (PR 25483's
  baseline, Jul 2026) its Qwen3 30B-A3B Q2_K and gpt-oss 20B prompts ran at
  7627.01 and 7094.69 tok/s).
- XiongjieDai's Dec 2023 tables time llama.cpp `main`, not llama-bench
  (the commit's notebooks: builds 1671 to 1691 on NVIDIA, n_ctx 512, one
  494-token prompt, the first a fresh process runs, timed once, and its
  mean over three processes). Fitted, their prompts ran 5-62 % over the
  estimate on every NVIDIA card, F16 and Q4_0 alike, while the same
  source's May 2024 llama-bench rows of the same cards (each test repeated
  in one process) ran from a quarter under to a sixth over; the 3090's
  llama-2-7b F16 prompt ran at 3075 tok/s there and at 4185 in the Jan
  2024 PR #4766 baseline (llama-bench, a build weeks later). Since Nov 2026
  those prompt rates are compared, not fitted (the line "`main` first
  prompts" of the table above; their decode rates are fitted): the fit's
  prefill median went from 11.9 to 6.8 %, the held-out median from 13.9
  to 7.4 %, and the lent H100's and H200's F16 prompts from 38 % and 42 %
  under to 17 % and 22 %. Which part of the gap is the build and which
  the single first prompt is not established (a build-date term on the
  prefill time, fitted like the decode's with those rows in the fit, chose
  0.3 a year for NVIDIA and 0.7 for AMD, took the fit median from 11.9 to
  9.9 % but put the held-out GB10 Qwen2.5-Coder 7B Q8_0 at 3.3 times its
  rate and the held-out worst from 115 to 225 %; not kept). The 4090's
  LLaMA 7B q4_0 prompt of that snapshot (3961.34 tok/s) is left out: its
  notebook's three runs (4113.14, 5427.62, 2343.25) spread 2.3-fold.
- The CUDA baselines of prompt processing in PRs 7676, 7860 and 7921
  (RTX 4090 Q4_0, Q4_K_S and Q2_K, RTX 3090 Q6_K; June 2024) are builds
  with LLAMA_CUDA_FORCE_MMQ: that month's master sent micro-batches above
  64 to FP16 cuBLAS on GPUs with tensor cores until PR 8075 (2024-06-24),
  and the PRs, which changed only the MMQ kernels, print 1.65-1.95x
  speedups at microbatch 512, so their master columns ran the DP4A MMQ
  kernels. The planner plans them as the default build of their month
  (the factor before int8 MMQ), and the RTX 3090 Q6_K row runs at about
  half the estimate. Left out of the fit (Nov 2026, tried, when the
  factor was fitted at 1.55; it is {mmq_era} since five NVIDIA Vulkan rows
  joined, PR 25483's, PR 21024's RTX 3090 Q4_1 and geerlingguy's RTX 4090
  and RTX 2080 Ti runs), they took the factor before int8 MMQ from 1.55 to 1.45, which the pre-Ampere and
  Vulkan prompts of every build also take, and every figure no fit sees
  got worse: the scoreboards' prefill median from 14.3 to 14.7 %, the
  lent H100's batched prefill worst from 24 to 36 %, the GeForce
  multi-GPU prefill median from 24 to 28 % (worst 192 to 219 %), the
  held-out prefill median from 7.3 to 8.9 % (the fit's worst row from 118
  to 124 %, the RTX 5090's Vulkan MoE prompt). One factor stands for three kernel paths (FP16 cuBLAS of
  builds before July 2024, Volta and Turing, NVIDIA under Vulkan); Volta
  and Turing have four fit rows (V100 only; the rule asks for five) and
  NVIDIA's Vulkan prompt rows are twelve on four cards (RTX 5090, 3090,
  4090, 2080 Ti), half of them mixture-of-experts prompts whose
  per-backend factor is fitted on them too. Fitted apart (tried Nov 28,
  2026: a factor of NVIDIA's Vulkan prompts' own, which came out at 1.8)
  they put the fit's prefill median from 6.9 to 7.3 % and the held-out
  median from 8.2 to 9.2 %, the worst row unchanged, so they keep the
  shared factor. A factor of its own for quantized prompts under Vulkan
  on the Radeon class (tried the same day: 1.9, Vulkan slower than
  ROCm on the same cards) raised the Ryzen AI Max+ 395's device factor so
  that its ROCm rows went 42-55 % over, and the held-out prefill median
  from 7.5 to 8.7 %: not kept either. Nor was an era for RDNA 3 and 4
  after NVIDIA's pattern: llama.cpp's HIP backend dequantized their
  quantized prompts for hipBLAS until its WMMA-MMQ kernels (PR 17156,
  RDNA 4, 2025-11-24; PR 17576, RDNA 3, 2025-12-05; ggml-org/ggml's sync
  history of `src/ggml-cuda/mmq.cu`), and the 2026 ROCm rows of RDNA 3 and
  3.5 run 22-37 % faster than planned. A factor on the earlier builds'
  and Vulkan's prompts on those GPUs (tried Nov 28, 2026: 1.75) took those
  rows to within 25 % and the Radeon 8060S's Vulkan rows from 90 % to
  59 % over, but raised the Radeon cell, so that RDNA 4's 2026 rows went
  35-43 % over and RDNA 1 and 2 (DP4A MMQ on the vector units, another
  path again) up to 101 %; the fit's prefill median went from 6.9 to
  7.2 %, the held-out one from 8.2 to 8.6 %. AMD's rows (ROCm and Vulkan, RDNA 1 to 4, K-, I- and legacy
  quants) spread widest; the Radeon PRO W7900's rows (lhl's notes, 2024
  builds, ROCm and Vulkan) gave the Radeon class a prefill cell of its own
  (fit median 12 %; its Vulkan pp512, 1813.49 tok/s against 2661 estimated,
  is the W7900's worst). The A40's
  Llama 3 70B Q4_K_M pp (May 2024) is left out since Nov 2026, as the
  L40S and A100 SXM 8B F16 pp of the same table were: it climbs from
  209.38 tok/s at 512 tokens to 291.13 at 8192, unlike every other row,
  and sits far below the about 380 its 8B Q4_K_M pp allows at 70B's
  weights (the corpus test `prompt_figures_that_climb_with_prompt_length_are_left_out`
  now checks the rule over all of speed.csv). Without it the NVIDIA
  data-center prefill median went from 7.4 to 5.7 % (held out 8.4 to
  6.8 %).
- AMD under Vulkan, builds before February 2026: llama.cpp's Vulkan
  matmul ran AMD's cooperative-matrix GPUs (RDNA 3, 3.5, 4) on tile
  parameters not tuned for them until PR 18749 ("Vulkan: Optimize Matmul
  parameters for AMD GPUs with Coopmat support", opened 2026-01-11), whose
  description measured a Radeon 8060S's llama 8B pp512 before and after:
  Q4_0 644.84 to 875.24 tok/s, Q4_K_S 529.50 to 793.51, Q8_0 422.37 to
  742.46. Since Nov 28, 2026 such a quantized prompt of an earlier build
  takes a fitted factor on its time (`vulkan_amd_untuned`,
  `PREFILL_VULKAN_AMD_ERA` in `src/plan/speed.rs`: {vulkan_amd_era}, chosen
  on the prefill error of all rows; 14 fit rows before, 7 after). Unlike
  the era tried earlier the same day (above: HIP before its WMMA MMQ and
  every Vulkan prompt on RDNA 3 and 4, 1.75), it covers only the kernels
  the PR changed. Measured against the model without it: the AMD class's
  prefill fit median from 17.4 to 12.9 % and worst from 94.9 to 61.6 %,
  its held-out worst from 49.4 to 28.2 % (median 9.5 to 12.0 %, five
  rows); the Strix Halo Vulkan rows of July 2025 to January 2026 from 43
  to 95 % over to 42 % under to 35 % over, the W7900's RADV row of
  December 2024 from 51 % over to 11 % under; all classes' prefill fit
  median from 7.8 to 7.5 %, held-out from 9.5 to 10.4 %. The AMD cell
  rose with it, and on the scoreboards (never fitted, current builds) the
  RX 7900 XTX, 7900 XT and 7800 XT's ROCm prompts went from 26-31 % under
  to 18-23 % under, the RX 6700 XT to RX 6900 XT's from 38-48 % to
  31-42 % under, the Radeon 8060S's Vulkan one from 19 % under to within
  1 %, and the RX 7900 GRE's from 26-34 % to 40-48 % over. The Ryzen AI
  Max+ 395's device factor rose too (its Vulkan rows no longer hold it
  down): its ROCm rows of July 2025 went from 5-15 % over to 30-42 %
  over, and its b8038 ROCm Qwen3 30B-A3B row from 44 % to 62 % over (the
  AMD class's worst). 16-bit prompts take no factor: no row measured
  them on both sides of the PR.
- Prefill terms tried and not kept (Nov 2026, same corpus): a build-date
  factor on the prefill FLOPs time like decode's (exp(d × age) per vendor
  group, d from the same grid) took the medians from 10.7 % / 13.7 % (fit
  / held-out) to 9.2 % / 10.7 % but the worst from 184 % to 209 % (MI300X),
  and its newest-build 16-bit efficiencies came out above 1 (nvidia-
  datacenter 1.36, nvidia-consumer 1.27 of the fp16-accumulate rate):
  extrapolated, not physical. A step at llama.cpp's switch of quantized
  prompts to int8 tensor-core MMQ (PR 8075, June 2024) cut the fit's
  squared error by 10 % and moved no median or worst by more than a
  point. Cells per backend (Vulkan apart from ROCm, SYCL and CUDA) left
  the fit alike and the held-out decode worst at 75 %; one prefill factor
  per vendor and non-native backend (the refit gave AMD's Vulkan 1.65 and
  NVIDIA's none) moved the medians from 12.4 % / 10.6 % to 11.5 % /
  12.2 % and no worst row. Held out, the prefill worst is such a row: the
  Ryzen AI Max+ 395's Shisa V2 8B (Llama 3.1 8B) Q4_K_M pp512 on Vulkan
  (lhl, 616.99 tok/s, 52 % over; the same table's HIP row with hipBLASLt
  prints 878.18). The AMD rows'
  measured prefill is 0.22 to 0.66 of the ideal rate at efficiency 1
  (RDNA 1 to 4, MI50, MI100 and MI300X; ROCm and Vulkan; legacy, K- and
  I-quants): a spread one efficiency per class cannot hold within 60 %.
- NVIDIA datacenter and workstation cells rest on one source's May 2024
  llama-bench snapshot (XiongjieDai's Professional GPUs table: A40, L40S,
  A100 PCIe and SXM 80GB, H100 PCIe, RTX A6000, RTX 5000 and 6000 Ada;
  Llama 3 8B and 70B, pp and tg at 512 to 8192 tokens) and its Dec 2023
  H100 PCIe rows; the datacenter rows of 2025 builds are a V100's (PR
  12183's baseline) and the A30's above. No H100 SXM, H200, GH200 or B200
  row is in the corpus: their decode takes the class's cells at the newest
  NVIDIA builds' per-layer time (the build-date term, fitted on every
  NVIDIA class's rows: GeForce, workstation and GB10 rows of 2025-2026
  builds beside the 2023-2024 ones). The one Blackwell card with rows, the
  RTX PRO 6000 Workstation Edition (lhl's notes, a Sep 2025 build, `fa 1`),
  processes dense prompts faster than estimated (pp512 16634.04 tok/s
  against about 9800), its Qwen3 30B-A3B prompts (MoE) slower.
- RDNA 4: since Nov 2026 the RX 9070 XT, RX 9070, RX 9060 (XT), RX 9070
  GRE and AI PRO R9700/R9600D entries record AMD's FP16 Matrix rate (WMMA,
  twice the packed vector rate they recorded before; RDNA 3 runs both at
  one rate), as the entries of other GPUs with matrix engines do. The RX
  9070 XT's HIP prompt (issue 26663, b10298) was 47 % under at the vector
  rate and is 7 % under; PR 26284's AI PRO R9700 row (3853.91 tok/s,
  added then) is within 2 %, where the vector rate put it about half. The
  same issue's Vulkan run of the RX 9070 XT is 36 % over: llama.cpp's
  Vulkan K-quant prompts on AMD ran at 0.68 of HIP's there and at about
  0.7 in lhl's Strix Halo runs, which the AMD cell does not tell apart.
- Long prompts: most prefill rows ran llama-bench's default of their
  build, `-fa 0` until May 2026, which materialises the attention scores.
  Rows whose notes say `fa 1` (lhl's, llama.cpp's dgx-spark.md, PR
  21024's) and rows of builds from June 2026 on, whose llama-bench
  defaults to `-fa auto` (PR 23714, opened 2026-05-26; its merge month is
  assumed, as `LLAMA_BENCH_FA_AUTO` in `tests/accuracy.rs` says; flash
  attention on every GPU backend:
  the RX 7900 XTX and AI PRO R9700 of PR 26284, the RX 9070 XT of issue
  26663, the MI50 of PR 27841), are estimated with fused attention. The fitted bytes per
  score (`SCORE_BYTES`) follow the fall of prefill with the prompt; with
  fused attention (`-fa on`, which the emitted commands pass) the term is
  not applied.
- Hybrid linear-attention models (Qwen3-Next's and Qwen3.5's gated
  delta-net layers): a decode step reads and rewrites each such layer's
  recurrent state whole (2 MiB a sequence for Qwen3-Next and Qwen3.5-35B-A3B
  in llama.cpp's F32), in kernels that run a few dozen heads and do not
  fill a GPU (llama.cpp PR 20391: 16-32 thread blocks against 80+ SMs; PR
  22587 timed the CUDA kernel alone at 28.3 µs a token on an RTX 5090,
  4 MiB moved at 8 % of its bandwidth). Since Nov 28, 2026 decode moves the
  state, read and written, at a fitted fraction of the bandwidth
  (`LINEAR_STATE` in `src/plan/speed.rs`: {linear_state}; chosen on those
  rows' decode error, first with the build-date decays at none, then with
  them chosen), instead of once at the KV cache's fraction. Its rows:
  visorcraft's Strix Halo runs of Qwen3-Coder-Next 80B-A3B Q4_K_M at build
  b8038 (Vulkan and ROCm 7.2), llama.cpp issue 22375's Radeon 8060S runs of
  Qwen3.5-35B-A3B Q4_K_M at b8460 and b8933, and, held out, PR 22478's RTX
  PRO 6000 Qwen3-Next Q4_K_M tg128 (CUDA, April 2026). Their decode went
  from 26 % to 75 % over (the RTX PRO 6000's 38 %) to 11 % under to 24 %
  over (the RTX PRO 6000's 12 % over), with no other line of the table
  above moved by more than a point. The prompts of these models stay at their FLOPs: no
  term describes the delta-net layers' prompt kernels yet, so their rows'
  prompts are compared, not fitted (the table's line "linear-attention
  models' prompts"; the plan warns), 35-68 % slower than planned.
- Prompts of builds inside a window of slow prompt kernels that the pull
  request ending it states (`SLOW_PROMPT_KERNELS` in `src/plan/speed.rs`)
  are compared, not fitted (the table's line "prompts of builds with slow
  kernels"; a plan for such a build warns that its prefill is an upper
  bound), as the linear-attention prompts are: the planner has no term for
  the window. Two windows: SYCL Q4_0 prompts on Intel GPUs in builds of
  March to May 2025 (the reorder layout was on by default from PR 12035 of
  February 2025 to PR 12560 of 2025-03-25 and from PR 13003 of April 2025;
  PR 13536, opened 2025-05-14: "The reorder
  optimisation introduced a prompt processing performance regression for
  Q4_0 models"; the Data Center GPU Max 1100's llama 7B Q4_0 pp512 ran at
  1751.95 tok/s where the same build's Q4_K_M ran at 3369.32), and Vulkan
  mixture-of-experts prompts in builds before September 2025 (PRs 15427
  and 15524, opened 2025-08-19 and 2025-08-23, which spread the
  `mul_mat_id` row-id loading over the workgroup; an RTX 5090's Qwen3
  30B-A3B Q4_K_M pp512 ran at 3971.06 tok/s on the master of 2025-08-11).
  Build months are months, so the window's last month also holds the
  RTX 5090's Vulkan MoE prompts of 2025-08-24, after PR 15427: they are
  compared too. Left in the fit (Nov 29, 2026) they were the fit's worst
  prefill row (132 %) and the held-out worst (114 %).
{above_one}- Rows measure decode, prefill or both (PR tables that time one test
  only); the shares in the line under the table are of the rows that
  measure the quantity.
- Rows without an estimate are devices the print does not resolve to one
  spec entry ("A100 80GB": PCIe or SXM not said; the desktop "3080 Ti"
  has no entry: no report of NVIDIA's figures or attributable capture of
  it was readable here; the Arc B580's rows are left unresolved, as
  speed.csv's header says; the RTX 4000 Ada's entry, since Nov 2026, is derived from
  a real deviceQuery capture of the card, docs/spec-database.md). The Arc
  A770, A750, A580 and A380 carry XMX rates computed from Intel's
  published Xe-core, XMX-engine and clock figures and the per-engine rates
  of Intel's Architecture Day 2021, the Data Center GPU Max 1100 and 1550
  from ARK's FP64 figure and the Xe-HPC per-Xe-core rate ratios (their
  notes). The Radeon 8060S
  (Ryzen AI Max+ 395), for which AMD states no rate, has one computed from
  its 40 compute units, its 2.9 GHz clock and the RDNA 3 rate per compute
  unit and clock of AMD's own W7900 figures (the entry's notes); its ROCm
  rows without hipBLASLt have their prompt figure left out (rocBLAS's
  gfx1151 kernels, which the same table's hipBLASLt rows outrun 3.0 to 4.6
  times on the same build), and its rows run the prompt at 0.2 to 0.4 of
  that rate, about half what the discrete RDNA 3 cards reach: its device
  factor carries the difference. The MI50 rows, which print no memory size, use the 16 GB
  entry: AMD's table gives both sizes the same bandwidth and rates. The M3,
  M3 Max and M3 Ultra entries have an fp32 rate from GPU clocks measured with
  powermetrics (cited in their notes; the M3 Ultra, two M3 Max dies, takes
  the M3 Max's, since Nov 2026, which gave its held-out Dec 2025 Llama 3.3
  70B prompt an estimate: 122.5 tok/s against 162.3); Apple states none.
- Decode, worst rows: the Data Center GPU Max 1100's llama-2-7b Q4_K_M
  (PR 12972, SYCL, 38.98 tok/s) and the Arc A770's Gemma 2 2B Q4_K_M on
  Vulkan (PR 14001's Windows baseline, 96.42 tok/s, held out). Intel cards
  have a decode fit of their own, on few rows whose builds differ widely
  (the A770's SYCL decode ranges over 2.5x across the sources' builds and
  settings). PR 14001's rows of the same cards under Ubuntu's Mesa driver
  (under half the Windows speed) are left out of the corpus, as its header
  says.
- The fitted corpus is llama.cpp (CUDA and Metal; ROCm and Vulkan on
  Radeon cards and the Radeon 8060S; SYCL and Vulkan on Intel). Radeon
  cards ("amd") and Intel cards have decode fits of their own; AMD Instinct
  parts ("amd-datacenter") have a prefill cell of their own (MI50, MI100
  and MI300X rows) and take the pooled decode cell ("any"): their only
  single-GPU decode rows are lhl's two MI300X runs of one Oct 2024 build.
- vLLM is fitted on the latency.csv rows alone (AccelMark: Llama-3-8B,
  Llama-3.1-8B at 28650-token prompts and Qwen2.5-0.5B, BF16/FP16 on one
  A100, H100, H200, L4, RTX 3090/4090/5090, RTX 6000 Ada, RTX A6000 or T4;
  vLLM 0.7.3 for most, 0.19/0.20 for the RTX 5090 and one A100 80GB set).
  Time per output token comes within the figures above; time to first token
  less so: the short prompts of the Qwen2.5-0.5B rows (median 95 tokens)
  and Llama rows (280) take 10 to 160 ms, most of it the request's fixed
  cost (scheduling, the first decode step, the stream's first chunk). One
  constant per runtime (`REQUEST_SECONDS`, seconds per request, added to
  every plan's TTFT under that runtime; about 15 ms for vLLM) is fitted
  together with the pooled prefill cell: a TTFT row's time per prompt token
  holds 1/n of it. Fitted after the per-token cells instead (until Nov
  2026), the request's time went into the per-layer prefill time, a cost
  per prompt token, and put long prompts far over (Qwen3-235B-A22B at
  4,194 tokens on 8 B200s: 596 ms estimated, 114.85 printed). A request
  served at tensor parallelism waits a further `REQUEST_SECONDS_TP` (about
  41 ms for vLLM), fitted last on the tensor-parallel TTFT rows (all of
  them TP 8, so TP 2 and 4 are an extrapolation) with everything else
  fixed. The same model and card can differ by two
  between vLLM versions (A100 80GB, Llama-3.1-8B at 28650 tokens: TPOT 30.57
  ms with 0.7.3, 13.1 ms with 0.20.1). Rows of two devices are compared
  and never fitted (notes item `not fitted`; the table's line "compared,
  not fitted"), because each runs vLLM unlike the data-center cell for a
  reason the planner has no term for: the V100S (Volta: vLLM 0.7.3 has no
  FlashAttention below sm80) and the H20-3e (since Nov 2026, the h20-3e
  entry from NVIDIA's aiconfigurator system file: the H200's 4.8 TB/s but
  a 148 TFLOPS 16-bit Tensor rate, and its Llama-3-8B step takes 12.81 ms
  against the H200's 7.62, 6.69 planned). Their errors are kept per device
  (`DEVICE_ACCURACY` in `src/plan/speed.rs`), and a plan on such a device
  under that runtime says so in its speed basis and warns that its speed
  is not confirmed. SGLang has 3 rows (A100 40GB,
  SGLang 0.5.6), too few for a fit, and uses the defaults. Rows run with
  tensor parallelism (suites B and G, 8 cards) are reported, not fitted,
  but for `REQUEST_SECONDS_TP`.
- Other runtimes use the `--decode-efficiency`/`--prefill-efficiency`
  defaults (0.6/0.5). speed.csv holds vLLM rows (mlc-ai/llm-perf-bench:
  Llama2-70B and CodeLlama-34B at batch 1, FP16 and AWQ, tensor parallel
  over 2 to 8 A100, A10G or RTX 4090 cards, vLLM of October 2023); ten
  have an estimate (the A10G and RTX 4090 rows; the source does not say
  which A100, 40 or 80 GB, PCIe or SXM). That vLLM predates CUDA graphs
  (PR 1926, December 2023), so these rows are planned eager
  (`InferenceOptions::eager`, `plan --enforce-eager`): each decode step's
  per-layer time is `EAGER_TP_LAYER_SECONDS`, fitted on the 8 fit rows
  (`fit_eager`: the planned step without its per-layer time, plus L × c,
  on the relative error) at 469 µs, against 82-95 µs fitted for the
  CUDA-graph releases latency.csv measures. They reach median 2.6 %,
  worst 24.7 % (Llama2-70B AWQ over 2 RTX 4090s, held out, under);
  planned with the graphs' per-layer time they were 44 to 180 % over, the
  more so the smaller the model and the more cards: CodeLlama-34B AWQ
  over 2 RTX 4090s (26.16 tok/s) runs barely faster than Llama2-70B
  (23.8), its steps bound by launches, not bytes. The term rests on this
  one source: no published single-GPU eager run is among the rows, so a
  one-device eager plan keeps the graphs' per-layer time and warns; other
  rows run with tensor parallelism are never fitted (their time includes
  the all-reduces).
- All-reduces: a decode step's two all-reduces per layer under tensor
  parallelism take their bytes over the link plus a fixed latency
  (`inference::allreduce_latency`), measured, not fitted here: NVIDIA's
  aiconfigurator tables (`tests/calibration/allreduce.csv`, pinned) give
  4.9 µs over NVLink (the median of vLLM 0.14.0's custom all-reduce under
  CUDA graphs, messages up to 16 KiB, 2 to 8 A100 or H100 SXM) and 5.4 µs
  per further rank over PCIe (NCCL 2.27.3 on 2 to 8 L40S). At 80 layers
  that is 0.8 ms a token over NVLink and 6.0 ms at TP 8 over PCIe. It took
  the RTX 4090's Llama-3-70B TP 8 time per output token from 18 % under to
  2 % over, SGLang's TP 8 rows on B200 and MI300X from 12-35 % under to
  4-28 % under (gpt-oss-120b from 31 to 46 % over), and the A10G rows
  above from 64-192 % to 44-114 % over (then planned with the graphs' per-layer time); the RTX A6000's TP 8 rows, over
  PCIe between NVLink-bridged pairs, went from 1-8 % under to 16-18 % over
  (that machine's PCIe all-reduces are faster than the L40S's). A prompt's
  all-reduces carry a chunk of tokens each, so their latency is left in the
  request's own time under tensor parallelism (`REQUEST_SECONDS_TP`).
- TensorRT-LLM ("runtime trtllm"): six batch-1 rows of NVIDIA's
  TensorRT-Model-Optimizer benchmark table (H200, TensorRT-LLM v0.15,
  trtllm-bench, 2048 input and 128 output tokens; Llama 3.1 8B and 70B in
  BF16, FP8 and INT4 AWQ), too few for cells of its own: they are
  estimated with vLLM's cells and reported ("all (unfitted)"). BF16 and
  FP8 come 10 to 17 % under; INT4 AWQ is over (the 70B by 34 %: its 4-bit
  weights are read at the 16-bit cell's rate, while TensorRT-LLM's W4A16
  decode runs barely faster than its FP8). Whether the table's tokens/s
  counts the prompt's prefill in the time is not said; if it does, the
  decode rate is a few per cent above the printed figure.
- The rows of the Dec 2023 tables are `main` runs: a 494-token prompt
  (265 on the M1 Max), planned as such, and 1023 decode steps through
  context shifts at n_ctx 512, planned as llama-bench's tg128 (contexts
  256 to 512 hold a few per cent more KV cache than tg128's 0 to 128).
"""


DOC_SPLIT = """
## Several GPUs: llama.cpp's layer and tensor splits

[`crates/ai-hwaccel/tests/calibration/split.csv`](../crates/ai-hwaccel/tests/calibration/split.csv)
holds published llama-bench runs of one model spread over 2 to 8 GPUs: by
llama.cpp's layer split (its default), and four gpt-oss 120B rows on 4 RTX
4090s under both the layer and the tensor split (PR 19378). The test
`layer_split_estimates_against_published_measurements` plans each row on as
many devices, one pipeline stage per device (layer) or tensor parallelism
over all of them (tensor), under the fitted speeds (these rows are never
fitted), and compares decode per sequence and prefill:

| rows | decode rows | decode median | decode worst | prefill rows | prefill median | prefill worst |
| --- | --- | --- | --- | --- | --- | --- |
{lines}
The test {status}; it holds each class to what it reaches
(`ACHIEVED_LAYER_SPLIT`). Three tests have no estimate: the 6 × RTX 3090
Llama 3 70B F16 rows at 4096 and 8192 tokens, run with `-fa 0`, whose
compute buffer holds every attention score (1 GiB per card at 8192
tokens) beside 21.9 GiB of weights per 24 GiB card; the plan follows
llama-server's rule, which leaves `--fit`'s 1 GiB free per device, and
llama-bench does not fit. Prefill over a layer split is pipelined as
llama.cpp runs it (`src/plan/inference.rs`, "llama.cpp pipelines a prompt"):
each logical batch of 2048 tokens is cut into micro-batches of 512, and the
stages work on successive micro-batches at once, so a prompt of up to 512
tokens gains nothing and longer ones approach `m·S / (m + S − 1)` times the
one-device rate (`m` micro-batches, `S` stages). Without that, the NVIDIA
rows' prefill median error was 34 %. The GeForce class's worst prefill
rows are gpt-oss 120B's over four RTX 4090s (up to 2.4 times the measured
rate, after the routed-expert factor that brought them down from 3.7;
these rows are not fitted); its decode is 41 % over under the tensor split
and 13 % under with the layer split. The AMD rows are 8 × MI300X runs from
AMD's ROCm blogs (early-2025 builds), where llama.cpp decoded at about half
the estimate and processed DeepSeek V3's prompts (MoE on ROCm) at a small
fraction of it, and lhl's llama-2-7b Q4_0 over 8 MI300X (an Oct 2024 build,
decode 43 % over); the class's prefill cell comes from single MI50, MI100
and MI300X rows, its decode cell is the pooled one. Since the MI300X's
single-GPU rows of Oct 2024 are planned at the vector rate their build ran
on (Nov 2026, `cdna_vector_ratio`), the refitted cell puts AMD's Llama 3.1
70B over 8 MI300X (build 5997) 20-43 % over (within 9 % before): the
class has no single-GPU MI300X row of a build since February 2025.
The NVIDIA datacenter and workstation rows are the four-GPU rows of
XiongjieDai's Professional GPUs table (May 2024; A40, L40S, A100 PCIe and
SXM 80GB, H100 PCIe, RTX A6000, RTX 5000 and 6000 Ada). Their worst prefill
rows are Llama 3 70B Q4_K_M's over four L40S, A100 SXM, RTX 5000 Ada or A40,
estimated at 2 to 2.5 times the printed rate; their worst decode rows are
the A100 SXM 80GB × 4's 8B rows, up to 35 % over (that machine's tg is 12
to 17 % below the A100 PCIe 80GB × 4's in the same table), but for
lhl's DeepSeek V3 Q5_K_M over 8 H100 (a Jan 2025 build), which decodes at
44 % of the estimate and processes its 512-token prompt at a seventh of it,
as the MI300X's DeepSeek V3 rows do: the class's worst figures are that
row's.
"""

DOC_CPU = """
## CPUs: llama.cpp without an accelerator

[`crates/ai-hwaccel/tests/calibration/cpu.csv`](../crates/ai-hwaccel/tests/calibration/cpu.csv)
holds published llama.cpp runs on CPUs alone (llama-bench tables and
`llama-cli` timings with the CPU and its thread count printed; one source URL
per row). The test `cpu_rows_against_published_measurements` checks every
row resolves (model, format, CPU table id) and plans the rows whose CPU is
in the CPU table (`src/spec/cpus.toml`) on that CPU: its theoretical
bandwidth × sockets and the peak rates of the cores the run's threads use.

| rows | all | with a CPU table entry | decode rows | decode median | decode worst | prefill rows | prefill median | prefill worst |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
{lines}
The test {status}. Ten rows are on CPUs of the table (Threadripper PRO
5975WX and 5995WX, Graviton4, EPYC 7702 and 9534). The rows are compared,
never fitted: they differ most in what the plan does not model. The
5975WX's decode rows ran 8 threads, which do not draw the eight channels'
peak the plan reads at (89 % and 137 % over); the EPYC 9534 rows ran with 4
NUMA nodes and clocks scaled to 45-70 % (220 % over); the 5995WX at 64
threads is 10 % under. Most published CPU runs are on parts the table has
no vendor-checked row for (65 rows on a Ryzen 9 7950X, whose memory
transfer rate no copy of AMD's table gives; Graviton3, an
engineering-sample Xeon). The CPU class ("cpu") is never pooled with the
GPU cells. CPU plans use the options' efficiencies (`--decode-efficiency`,
`--prefill-efficiency`) against the table's theoretical bandwidth, and an
efficiency of 1 against a measured one (`plan --measure` times the same
streaming reads decoding does). On this project's build VM (2 Zen 4 vCPUs,
llama-bench of the pinned llama.cpp on a 1.1B Llama-shaped GGUF with random
weights, 2026-11-26): tg128 41.94 tok/s (Q4_0) and 16.16 (F16) against
41.7 and 16.3 planned with `--measure` (25.9 and 34.2 GB/s measured just
before: the figure varies from run to run on this shared VM, 26 to 34
GB/s); pp512 83.21 (Q4_0) and 55.75 to 65.47 (F16, two runs) against 39.7
planned from the core design's peak at the default prefill efficiency of
0.5, so the CPU prompt estimates are low by about half until CPU rows can
be fitted.
"""


DOC_BATCH = """
## Serving batches: fixed-batch throughput

[`crates/ai-hwaccel/tests/calibration/batch.csv`](../crates/ai-hwaccel/tests/calibration/batch.csv)
holds published output throughput of fixed batches above one sequence:
TensorRT-LLM's performance tables of v0.5 and v0.6.1 (`docs/source/performance.md`
and the H200 launch blog, pinned commits; Llama 2 7B, 13B and 70B on H100,
L40S and H200; the tables' "A100" rows name no single part and are not
planned), vLLM's `benchmark_latency.py` on eight MI300X (Oracle's blog,
Llama 3.1 405B FP8, batch 1 to 256) and vLLM's nightly latency tests on
H200 (its Buildkite performance-benchmark build 9515: batch 8, 32 in / 128
out, mean end-to-end latency; Llama 3.1 8B, Llama 3 70B at TP4, Mixtral
8x7B at TP2). The test
`batch_rows_against_published_measurements` plans each row's layout and
compares the run it implies, the batch's prompts at the plan's prompt rate
and then the output's decode steps at the batch and the mean context, with
the printed tokens/s. The rows are compared, never fitted: the speed cells
are fitted at batch 1.

| rows | all | planned | median | worst |
| --- | --- | --- | --- | --- |
{summary}
The test {status}.

| runtime | devices | TP | model (KV cache) | batch | in / out | printed tok/s | planned | error |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
{rows}
What the rows show:

- A decode step of a serving batch is bounded by its FLOPs as well as its
  bytes (the roofline, Nov 2026): on bytes alone the plan put Llama 2 70B
  on two H100 at batch 1024 (128 / 128) 78 % over, on one H200 at batch
  512 81 % over and on two H200 at batch 512 (128 / 2048) 352 % over; with
  the FLOPs at the prompt rate (the longer of the two), 27 %, 31 % and
  272 %. Since Nov 29 2026 a runtime fitted as vLLM (vLLM, SGLang,
  TensorRT-LLM) adds the GEMMs' FLOPs to the weights' bytes above one
  sequence instead of taking the longer (`decode_gemms_overlap` in
  `src/plan/speed.rs`): 14 %, 11 % and 144 %. Chosen on these rows, an
  overlap θ in `max(w, f) + (1 − θ) × min(w, f)` of 1, 0.75, 0.5, 0.25 and 0
  gave medians of 15.5, 12.7, 13.2, 13.7 and 11.9 % and worsts of 186.0,
  174.3, 163.4, 153.4 and 144.1 %; the serving rows below are the check
  it was not chosen on.
- Llama 2 7B and 13B (multi-head attention) are within 22 %, the largest
  batches of short requests too (batch 768 and 1024, 128 / 128: 5 % under
  and 6 % over).
- Llama 2 70B over long outputs runs up to 2.4 times slower than planned
  (TP4 H100, batch 480, 128 / 2048: 102 % over; TP2 H200, batch 512:
  144 %; TP2 H100, batch 64, 2048 / 2048: 72 %). These 2023 builds' decode
  attention for grouped-query models was the masked multi-head kernel
  unless the experimental XQA kernels were turned on (`TRTLLM_ENABLE_XQA`,
  "not enabled by default", performance.md says, and enabled "where our
  tests displayed performance benefits"): a kernel that reads the shared
  KV head once per query head moves up to eight times the cache the plan
  counts. The plan reads each KV head once, as FlashAttention, FlashInfer
  and XQA do.
- Current vLLM at a small fixed batch on H200 (batch 8) is within 7 %:
  the batch-1 cells hold there.
- vLLM's Mixtral rows of 2024 (PRs 3240 and 4002, benchmark_latency on
  A100, the master path without the PRs' tuned fused-MoE configs; added
  after the decode-step rule was chosen, so a check of it): Mixtral 8x22B
  on four A100 within 5 %, on eight 13-23 % over; Mixtral 8x7B on two at
  1000 / 50 tokens 8 % over at batch 4 and 55 % at 64, where the batch's
  64,000 prompt tokens dominate and the kernels the PR tuned ran them
  slower. With the roofline step the twelve were 4-59 % off (median 15 %),
  with the sum 2-55 % (median 14 %), closer on ten.
- vLLM on eight MI300X (Oct 2024 blog) grows its step time by about 0.4 ms
  per sequence (3.53 s for 128 tokens at batch 1, 17.75 s at 256), 17 %
  over at batch 1 and 67 % at 256 (93 % with the roofline): per-sequence
  cost beyond the bytes and FLOPs (scheduling, sampling, the attention
  kernels and FP8 GEMMs of that ROCm build) that the plan does not model.
"""


DOC_SERVING = """
## Serving benchmarks: closed loops of requests

[`crates/ai-hwaccel/tests/calibration/serving.csv`](../crates/ai-hwaccel/tests/calibration/serving.csv)
holds published serving benchmark results at a concurrency above one, as
printed: `--max-concurrency` requests in flight, each finished request
replaced by the next. SGLang's are `sglang.bench_serving` blocks of
sgl-cookbook (pinned commit: SGLang 0.5.6 to 0.5.9 on eight B200 and
eight MI300X, random prompts and outputs), GPUStack's performance lab (one
H100) and a GH200 owner's saved results; vLLM's are `vllm bench serve`
blocks and saved result files of vLLM's recipes, GPUStack's performance
lab, an MI100 owner's notes, Google's TPU recipes and a ShareGPT sweep on
one RTX 4090 (vLLM 0.8.5 to 0.25.1); TensorRT-LLM's are GPUStack's (one
H100) and an RTX PRO 6000 owner's (`trtllm-serve` 1.3.0rc3). The file's
header names each source.
Runs whose server the planner does not lay out (DP attention,
speculative decoding) are left out, as in latency.csv. The test
`serving_rows_against_published_measurements` plans each row's model,
format and tensor parallelism at the mean of requests in flight (SGLang's
`Concurrency`; vLLM prints none, so the cap, at most the requests sent)
and the mean prompt and output lengths (a loop holding more requests than
the plan's KV cache does at the most it holds: the others wait for a slot,
in their time to first token), and compares the
mean TPOT with the plan's `served_tpot_ms`: the decode step at that
batch plus, spread over each request's output, the other requests'
prompts: λ = (B − 1) / output prompts arrive per decode step, λ × prompt
tokens at the plan's prompt rate (the generation stalls of Sarathi-Serve,
arXiv:2403.02310). vLLM's V1 scheduler puts those tokens in the decode
steps' own batches; SGLang runs the arrived prompts as a prefill pass of
their own before the next decode step (`Scheduler.get_next_batch_to_run`:
"Run prefill first if possible"; `--enable-mixed-chunk` is off by
default), so its steps also wait for each such pass's fixed part, the
runtime's per-request seconds of the plan's time to first token, on the
fraction 1 − e^(−λ) of steps in which a prompt arrives (arrivals spread
as a Poisson process; prompts arriving within one step share one pass).
Rows whose device has no spec entry are not planned.

The mean time to first token is compared with the run's closed loop
(`inference::closed_loop_ttft_ms`), not an idle replica's. The clients'
requests arrive together at the start: the replica takes their prompts in
order, as many tokens a forward pass as the runtime's prompt budget
(vLLM's `max_num_batched_tokens`, SGLang's `chunked_prefill_size`,
TensorRT-LLM's `max_num_tokens`, each as it defaults for the device), and
a request's first token comes at the end of the pass that finishes its
prompt. Every later request arrives in the steady loop
(`Plan::served_ttft_ms`): sent as another finishes, at the end of a decode
step, it waits for the step then in progress, and under vLLM and
TensorRT-LLM, which put prompts into the decode steps' batches, also for
the step that carries its prompt beside the other requests' decodes; two
served steps beyond the idle TTFT (one under SGLang, which prefills it in
a pass of its own after the step in progress). A loop with more clients
than the plan's KV cache holds also queues each later request for a slot:
by Little's law (C − H) ÷ H request latencies for C clients over H slots.
The mean is over the run's completed requests. The output throughput is
compared too: the batch's requests, each over one request's planned
latency (the served TTFT, then the later tokens at the served TPOT),
against the printed output tokens/s. Compared, never fitted.

| rows | all | planned | served TPOT median | served worst | plain TPOT median | plain worst | throughput median | throughput worst | closed-loop TTFT median | closed-loop worst | idle TTFT median | idle worst |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
{summary}
The test {status}.

| runtime | devices | TP | model | concurrency (in flight) | in / out | printed TPOT ms | served | error | plain | error | printed output tok/s | planned | error | printed TTFT ms | closed loop | error | idle | error |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
{rows}
What the rows show:

- Short requests at concurrency 100 (about 90 in flight, 500 / 500):
  about 0.18 prompts arrive per decode step, and under SGLang each
  arrival's step also waits for a prefill pass of its own. Charged at the
  plan's per-request seconds (51 ms at TP 8), Qwen3-235B is 6 % under,
  DeepSeek-R1 22 % and Llama 4 Maverick 14 % (32 %, 44 % and 40 % under
  on the prompt tokens alone). gpt-oss-120b (297 / 192: 0.46 arrivals a
  step) is 75 % over, 57 % under before: its pass is planned at the
  fixed part of its concurrency-1 TTFT, and that TTFT is itself planned
  73 % over (54.9 ms against 31.79 printed on the same page), so the
  stall is too; with the printed TTFT as the pass it would be 16 % over.
  Llama 4 Scout on MI300X stays 45 % under: its step at 92 sequences
  takes 41.56 ms where the bytes it reads take about 5.
- Long prompts at high concurrency: at 64 (about 60 in flight), 3981 /
  530, Qwen3-235B BF16 is 36 % under on the plain decode step and 24 %
  over served, DeepSeek-R1 FP8 47 % under and 7 %, DeepSeek-V3.1 on
  MI300X 73 % and 48 % under.
- Long outputs at any concurrency are the plain decode step: Qwen3-235B
  within 10 %, DeepSeek-R1 within 22 %.
- DeepSeek-V3.1 on MI300X (SGLang 0.5.7) is 48-62 % under at every
  concurrency and length, and its concurrency-1 runs on the same page
  print 23.84-24.93 ms against 7.38 planned: a gap of that device and
  runtime at batch 1 (its MLA decode on that ROCm build), which SGLang's
  borrowed vLLM cells do not hold, more than a serving effect.
- The throughput is over wherever the TPOT is under, and more so at
  concurrency 16 with 500-token outputs, where the printed TTFT is over
  three times an idle replica's (Qwen3-235B at 16: 216 ms printed, 67 ms
  idle, 128 ms for the closed loop).
- The closed loop's TTFT: median 34.3 % over all runs, against 68.2 % for
  an idle replica's, which is under on every run but one. The first burst
  is what most runs' mean holds: at 64 and more clients with prompts of
  2,000 tokens and more it is most of it (Qwen3-Next on 4 × B200 at 256:
  1,388 ms printed, 1,130 planned, 81 idle). It is over where a
  mixture-of-experts model's burst ran faster than its single prompt's
  rate: SGLang's Qwen3-235B at 64 clients of 3,981-token prompts is 348 %
  over (238 ms printed): the plan prefills the burst at the rate of one
  prompt, whose micro-batches give each expert a few hundred tokens, where
  the burst's passes of 16,384 tokens give it thousands. Still under:
  vLLM's rows at two to eight requests on GPUStack's H100, A100 and H200
  (27-44 %, as their concurrency-1 TTFT on the same pages already is; one
  gpt-oss-120b run is 74 % over, its idle TTFT alone 48 %) and the RTX 4090
  sweep at 64 and 128 requests (20-46 %: the burst's passes also carry the
  decodes of the requests already started, which the plan leaves out).
- vLLM, whose steps carry the prompt tokens: on one RTX 4090 (ShareGPT,
  about 230 / 220 tokens, Qwen2.5-7B) the served TPOT in BF16 is 3-14 %
  over at 8 to 128 requests, in FP8 3-20 % under (20 % at 128). With the
  roofline step (the longer of the weights' bytes and the GEMMs' FLOPs,
  before Nov 29 2026) BF16 was 2 % over at 8 and 16 requests and 25 %
  under at 128, FP8 8-39 % under: a serving step does not hide the
  batch's GEMM work under the weight stream (`decode_gemms_overlap`,
  chosen on batch.csv, where these rows were not used). The FP8 runs still
  fall behind from 64 requests on: per-step work beyond the bytes, FLOPs
  and prompts (scheduling, sampling), as in SGLang's short-request rows.
- vLLM's DeepSeek-R1 runs are under like SGLang's: 52 % on 8 × H200 at 4
  requests, 31 % on 8 × MI300X at 128 and 256. The MI100's runs (vLLM
  0.8.5, TP 4) are 55-62 % under, and the MI355X's Llama 3.3 70B at 64
  requests of 8191 / 1024 tokens 40 % (FP8) and 31 % (MXFP4) over: a
  device with no calibration row, whose plain decode step is 23 % under
  while the plan's prompt rate puts the arriving 8191-token prompts at 39
  and 29 ms a step. The MXFP4 checkpoint is AMD's Quark W4A4 export,
  which vLLM multiplies in FP4 on the MI355X (`ModelSpec::
  activations_mxfp4`, `speed::mxfp4_activations_run_fp4`); planned at the
  16-bit rate, as every MXFP4 checkpoint was before Nov 30 2026, it was
  91 % over.
- Llama 3.3 70B on a TPU v6e-8 (vLLM's TPU image) is 19 % over at 64 and
  128 requests (5-9 % with the roofline step: its plain step is within
  6 %, the arriving 999-token prompts add the rest), and
  Qwen3-8B on one H100 at 2 to 8 requests 13-16 % over (SGLang's and
  TensorRT-LLM's runs of it at 4, 7-21 % and 11 %: the plain decode step
  is already over there).
- Short outputs under SGLang: Qwen2.5-3B on one GH200 with 31- and
  62-token outputs is 19-45 % over served and 3-57 % under on the plain
  step: the runs' steps stall less than a prefill pass at the plan's
  per-request seconds (13.7 ms on one GPU) on every step a prompt arrives
  in, while the plain step misses what they do stall.
- TensorRT-LLM on one RTX PRO 6000 (Qwen3-32B FP8, up to 512 requests in
  flight, of which the plan's KV cache holds 224 at their mean 513 + 511
  tokens, the batch it is planned at): 38 % over
  on random lengths and 26 % under on ShareGPT, whose printed TPOT (300
  ms) is three times the random run's.
"""


DOC_LENT = """
## Measured on a lent H200

Not published, so never fitted: this project's own llama-bench runs on an
NVIDIA H200 lent to a development session (2026-11-26; driver 580.159.04,
CUDA 13.0; llama.cpp from the llama-cpp-python 0.3.36 source distribution,
built for sm_90 with `-DGGML_CUDA_FA=OFF`), a Llama-2-7B-shaped GGUF with
random weights, `-ngl 99 -fa 0 -p 512 -n 128 -r 3`. The JSON llama-bench
printed is in `crates/ai-hwaccel/tests/fixtures/lent-h200/` (provenance in
its SOURCES.md); the test is `lent_h200_measurements_against_the_planner`
(it {status}). Measured: llama-bench's `avg_ts` (its first pp512 repetition
runs while the GPU clocks rise from idle, and is in the mean).

| device | format | test | measured tok/s | estimate | error |
| --- | --- | --- | ---: | ---: | ---: |
{lines}"""

DOC_BATCHED = """
## Batches of sequences: llama-batched-bench

[`crates/ai-hwaccel/tests/calibration/batched.csv`](../crates/ai-hwaccel/tests/calibration/batched.csv)
holds published `llama-batched-bench` lines as printed: B sequences, each
with its own prompt of PP tokens, then TG tokens decoded together (`S_TG`,
generated tokens per second over the batch). Sources: llama.cpp's own
`benches/dgx-spark.md` (NVIDIA GB10, build 6918, November 2025) and its
February 2026 rerun (build 7941), and the same file for an Apple M2 Ultra
(build 7948; the file prints no GPU core count, so its rows are kept but
not planned). Every run uses flash attention. The plan is made at each
line's batch and the decode steps' mean context (PP + TG/2).

Decode at a batch is the weights' read (or the batch's GEMM FLOPs, if
slower) plus attention: each sequence reads its own KV cache every step.
These rows fit one constant, the fraction of bandwidth llama.cpp's fused
attention reaches reading the cache ({kv_reads}), on the dense models'
fit rows (the step solved as A + K / f: A the planned step with the cache
read for free, K reading it at the full bandwidth). Mixture-of-experts
rows are compared, not fitted: the planner reads the experts a batch's
tokens route to as uniform top-k routing predicts, and the tool's random
tokens route far more alike (gpt-oss-120b at B = 32 runs up to twice as
fast as that allows). The test is `batched_rows_against_published_measurements`
(it {status}); `ai-hwaccel check` compares any batched-bench output the same
way.

| rows | all | planned (fit / held-out) | median (fit / held-out) | worst (fit / held-out) |
| --- | --- | --- | --- | --- |
{summary}
| device | model | flash attention | rows | median | worst | range |
| --- | --- | --- | --- | --- | --- | --- |
{rows}
Without a fitted fraction (attention reading the cache at the decode
fraction) the dense rows were planned 32 % to 73 % faster than they ran
at 16 and 32 sequences. A second
constant, seconds per sequence per step, fits the dense rows better
(0.61 of the bandwidth and 0.60 ms per sequence: worst 18 % against 33 %)
but is a time on one device (the GB10) that would not carry to others, so
it is not used. Unfused attention (`-fa off`) has no published batched
lines: unfused attention takes the fused fraction (it is no faster), while
this project's own H100 run (the section above, never fitted) reads the
cache at about 0.29 of the bandwidth there.
"""

DOC_DEPTH = """
## Decode after a long context: llama-bench at depth

[`crates/ai-hwaccel/tests/calibration/depth.csv`](../crates/ai-hwaccel/tests/calibration/depth.csv)
holds published llama-bench decode after a long context (`tg32 @ d32768`:
one sequence, 32 tokens after 32,768 already in the cache), as printed:
the NVIDIA GB10 files that batched.csv reads, and kyuz0's Strix Halo logs
(Radeon 8060S, ROCm 6.4.4, 7.2.3 and nightly, Vulkan AMDVLK and RADV;
build 9187). Compared, never fitted: a check of the KV-read fraction on the
device it was fitted on and on another vendor and backend. The plan is at
the mean context of the decode (M + N/2). Rows whose model and context do
not fit the chip's smallest memory configuration (the 8060S's memory is not
stated) are counted, not compared. The test is
`depth_rows_against_published_measurements` (it {status}).

| rows | all | compared | median | worst |
| --- | --- | --- | --- | --- |
{summary}
| device (backend) | model | rows | median | worst | range |
| --- | --- | --- | --- | --- | --- |
{rows}
The GB10's single sequences run 2 % to 25 % faster than planned: alone,
its cache reads reach nearer 0.6 of the bandwidth than the 0.43 the
batched lines fit (a fit of those lines with a second constant, seconds
per sequence per step, gives 0.61, see above). Vulkan on the 8060S reads
the cache faster than the fitted fraction (Llama 2 7B at 32k: 33 % to 39 %
under); its ROCm builds are within 19 %.
"""

DOC_SCOREBOARD = """
## Out of sample: the llama.cpp scoreboards

[`crates/ai-hwaccel/tests/calibration/scoreboard.csv`](../crates/ai-hwaccel/tests/calibration/scoreboard.csv)
holds the rows of llama.cpp's three scoreboards (discussions 15013 for
CUDA, 15021 for ROCm, 10879 for Vulkan): each a user's GPU running
llama-bench on the same Llama 2 7B Q4_0 file, pp512 and tg128, without
and with flash attention, on builds of August 2025 to April 2026. The
discussions were not readable here; the rows are a machine-parsed copy
(smoothyy3/willitrun, pinned in each row), values exactly as that file
holds them (kept byte for byte in `tests/fixtures/scoreboards/`;
`scripts/scoreboard.py` makes the CSV from it, and CI checks that it
does), and where other public quotes of the scoreboards were found
they agree. Compared, never fitted, and planned at the newest build (the
rows print a commit, not a date): a measure of the planner on builds and
GPUs the fit did not see. Its rows never enter a fit, but they did choose
between model forms (the int8 MMQ factor below), so its figures are no
longer a clean held-out measure of those choices. Rows that name no single part (A100 80 GB: PCIe
or SXM; RTX 3060: 8 or 12 GB; the RTX 4060 Ti, whose 8 and 16 GB cards plan alike, is planned as the 8 GB) or a part the database lacks are counted as
not estimated. The test is `scoreboard_rows_against_published_measurements`
(it {status}).

| quantity | rows | median | worst |
| --- | --- | --- | --- |
{summary}
| device (backend) | decode rows | median | worst | range | prefill rows | median | worst | range |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
{rows}
Decode carries over (median 9 %), but for two Pascal GeForce cards (GTX
1080 Ti, 1070 Ti: 31 % to 38 % over, with the per-layer time of builds
without CUDA graphs above, where the Titan Xp is within 3 % and the Tesla P40,
now planned with its own factor from four early-2024 decode rows, 5 % to 7 % over;
the 2060 SUPER, 30 % over where the same bandwidth's 2070 SUPER is
10 % under, is one user's card) and Intel's Xe2 cards (Arc B580
and B570 under Vulkan: 44 % and 27 % under), whose own SYCL and Vulkan rows
in speed.csv are not yet planned: with them in the fit, Intel's decode cell
rises and the Max 1100's Q4_K_M SYCL row (a build that decoded Q4_K at half
its Q4_0 speed) goes 89 % over, past the issue's 40 %.

Prefill: the fit's CUDA prompt rows are mostly of 2023 and 2024 builds (210
against 19 of 2025 or later), and llama.cpp's CUDA prompts have sped up
since: the same RTX 4090 ran llama 7B Q4_0 pp512 at 5531 tok/s in
XiongjieDai's December 2023 builds and 11992 in the CUDA scoreboard. From
PR 8075 (July 2024) quantized CUDA prompts run MMQ on int8 tensor cores
instead of FP16 cuBLAS, so the fit now plans a quantized NVIDIA prompt of an
older build, on a GPU below compute capability 8.0 (V100 stays on cuBLAS;
Turing's MMQ gained nothing: speed.rs `without_int8_mmq`) or under Vulkan
(whose shaders are not MMQ), at the fitted fraction divided by {mmq_era}
(`PREFILL_MMQ_ERA`, fitted with everything else, chosen on the rows other
than NVIDIA's Vulkan ones: four MoE runs on one RTX 5090), and every other
prompt at the fractions of int8 MMQ. This table is
what chose it: before it, the prefill median here was 28.8 % (Ada and
Blackwell GeForce and the workstation cards 20 % to 45 % under); speed.csv's
own prefill medians move from 12.5 % to 12.5 % (fit) and from 12.8 % to
14.5 % (held out).

Data-center GPUs' int8 MMQ prompts (Nov 2026): the MMQ kernels issue the
same `mma.sync` int8 instructions on every NVIDIA GPU from Ampere on (no
Hopper `wgmma` in ggml-cuda), and what they reach per SM and clock is
about the same on all: this table's llama 7B Q4_0 pp512 ran at 31 to 42
tokens/s per SM·GHz on the A30, A40, RTX A4000 to A6000, 3090 Ti, 4080,
4090 D and 5090 (31.8 on its A100 80 GB, whose PCIe or SXM form is not
printed) and the lent H100 and H200 at 36 to 37, while the A100's
datasheet tensor rate per SM is twice GA102's and the H100's four times.
So a data-center GPU's quantized CUDA prompt of a July 2024 build or later
is planned on the workstation cell (its fraction and per-layer time) at the
GPU's SMs × clock × 1024 FLOPs, GA102's dense FP16 rate per SM, which is 4 ×
FP32 × 128 / (FP32 lanes per SM) and equals the datasheet reference on every
GeForce and workstation entry (speed.rs `mmq_reference_ratio`, tested). The
A30 went from 82-94 % over to 16-25 % over here, the L40 from 37-42 % under to
-2..+3 % (its datasheet 16-bit rate is the FP32-accumulate one), the lent
H100 and H200 Q4_0 pp512 from 4-6 % over to 14-16 % under, Q8_0 from 37 %
over to 15 % under, Q4_K_M from 20 % over to 3 % under, and speed.csv's A30
row of Dec 2025 from 94 % to 23 % over. This table and the lent runs chose
it (the fit has one such row), so they are not a clean measure of it
either. What is left: the T4 runs slower than its class, and Intel's
discrete GPUs under Vulkan are planned under.

Pascal (Nov 2026): llama.cpp multiplies a quantized prompt on a GPU of
compute capability 6.1 to 6.x with its DP4A MMQ kernels (no tensor cores;
their 16-bit rate is 1/64 of FP32), so such a prompt is planned at the
card's int8 DP4A rate (its datasheet INT8 figure, else four times FP32:
`prompt_rate`, `dp4a_mmq` in `src/plan/speed.rs`) at one fitted fraction
per runtime, {dp4a}, with the pooled cell's per-layer time; before, Pascal
prompts had no estimate. The fit rows are the Tesla P40's of Jan 2024 to Jun
2026 builds (PRs 4766, 7716, 8416, 24127; all but one of 2024); here the GTX 1080 Ti, TITAN Xp
and Tesla P40 of 2025-2026 builds are 1 % to 14 % under (seven of the
eight fit rows are of 2024 builds); the GTX 1070 and 1070 Ti entries carry no FP32 rate and
stay without one. A format below 4 bits takes the fraction times the pool's
ratio of its below-4-bit prefill cell to the 4-to-8-bit one (`dp4a_width_ratio`,
as a class without a cell at a width takes the pool's ratio): the P40's
Q3_K_S prompts of January and July 2024 ran at 0.64 and 0.68 of its
4-bit ones on the same builds, and went from 65 % and 41 % over to 29 %
and 12 % over (the fit's DP4A fraction rose from 0.288 to 0.300, the
4-bit rows no longer pulled down by them); the scoreboards' Pascal prompts
here, 12 % to 24 % under before, are 1 % to 14 % under with it.

Corrections tried and not kept, because this table got worse: referring
quantized CUDA prompts of builds from July 2024 to the int8 tensor rate
(median 29.5 %, worst 137 %: Turing and the A30 over by 90 % to 137 %,
Blackwell GeForce unchanged, its entries carrying no int8 rate); a prefill
build-date decay fitted like decode's (0.75 per year for NVIDIA: in-sample
prefill median 12.5 % to 8.0 %, but here median 61 %, worst 294 %); the
era factor on Turing too (median 21.4 %, Turing 62 % to 111 % over; the
RTX 2080 Ti row of Dec 2025 in speed.csv, a held-out one, 110 % over); and the era factor on
every NVIDIA Vulkan row with those rows choosing it too (it went to the
grid's top, 3.0, and the held-out worst to 196 %). Before NVIDIA's Vulkan
rows took the factor, they were planned at the CUDA fractions: 17 % under
to 108 % over here.
"""

DOC_LENT_H100 = """
## Measured on a lent H100: batches of sequences

Not published, so never fitted: this project's own runs on an NVIDIA H100
80GB HBM3 lent to a development session (2026-11-27; driver 580.159.04,
CUDA 13.0; the same llama.cpp source and build options and the same
Llama-2-7B-shaped GGUF as the H200's, at Q4_0, Q8_0 and F16), in
`crates/ai-hwaccel/tests/fixtures/lent-h100/`: llama-bench (`-fa 0 -p 512
-n 128 -r 2`) and `llama-batched-bench -fa off -npp 512 -ntg 128 -npl
1,2,4,8,16,32,64,128` (each sequence its own prompt and KV stream). A
batched line is decode over all sequences (`S_TG`) against the plan at
that batch and the decode steps' mean context (576 tokens). The test is
`lent_h100_measurements_against_the_planner` (it {status}); `ai-hwaccel
check` prints the same comparison for any batched-bench output.

These runs turn flash attention off, for which no published batched line
fits a KV-read fraction: the plan reads each sequence's cache at the fused
attention's fraction (unfused attention reads the same cache and writes
its scores besides, so it is taken as no faster), and from 8 sequences on
is 5 % to 69 % faster than the runs. Their step times leave about 0.29 of
the H100's bandwidth for the cache once the weights' GEMMs are counted at
the prompt rate (F16 at 128 sequences: 45.6 ms per step, about 7 ms of
GEMMs, 38.6 GB of cache). Before attention was timed apart from the
weights, the same lines were up to 188 % over.

| device | format | test | measured tok/s | estimate | error |
| --- | --- | --- | ---: | ---: | ---: |
{lines}"""

if __name__ == "__main__":
    main()
