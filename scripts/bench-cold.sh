#!/bin/sh
# Whole-process `detect` times: this tree's release CLI against the public
# ai-hwaccel 1.2.0 crate's CLI, cold and warm, plus `detect --cached`, in one
# run with alternating runs and medians (issue 15; table in docs/benchmarks.md).
#
#   cold:   a new empty XDG_CACHE_HOME and POCL_CACHE_DIR for every run
#           (what every new container sees);
#   warm:   one XDG_CACHE_HOME/POCL_CACHE_DIR filled beforehand and reused;
#   cached: `detect --cached --json` with a stored registry (a hit).
#
# Needs: target/release/ai-hwaccel (cargo build --release -p ai-hwaccel-cli)
# and the 1.2.0 CLI:
#   cargo install ai-hwaccel --version 1.2.0 --root /work/cache/ai-hwaccel-1.2.0
# Usage: scripts/bench-cold.sh [RUNS]   (default 15)
set -eu
RUNS=${1:-15}
OURS=${OURS:-target/release/ai-hwaccel}
THEIRS=${THEIRS:-/work/cache/ai-hwaccel-1.2.0/bin/ai-hwaccel}
[ -x "$OURS" ] || { echo "build $OURS first" >&2; exit 1; }
[ -x "$THEIRS" ] || { echo "install the 1.2.0 CLI at $THEIRS first" >&2; exit 1; }
exec python3 - "$RUNS" "$OURS" "$THEIRS" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
runs, ours, theirs = int(sys.argv[1]), sys.argv[2], sys.argv[3]
base = tempfile.mkdtemp(prefix="bench-cold-")

def env_in(d):
    return dict(os.environ, XDG_CACHE_HOME=d, POCL_CACHE_DIR=os.path.join(d, "pocl"))

def fresh():
    return env_in(tempfile.mkdtemp(dir=base))

def timed(argv, env):
    t = time.perf_counter()
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ms = (time.perf_counter() - t) * 1e3
    if p.returncode != 0:
        sys.exit(f"{argv} failed with {p.returncode}")
    return ms

cases = {
    "ours detect --json": [ours, "detect", "--json"],
    "ours detect --json --full": [ours, "detect", "--json", "--full"],
    "1.2.0 (ai-hwaccel, JSON)": [theirs],
}
warm = env_in(tempfile.mkdtemp(dir=base))
for argv in cases.values():
    timed(argv, warm)  # fill pocl's and any other cache once
cached_env = env_in(tempfile.mkdtemp(dir=base))
timed([ours, "detect", "--json", "--cached"], cached_env)  # store the registry

res = {}
order = list(cases.items())
for i in range(runs):
    seq = order if i % 2 == 0 else order[::-1]  # alternate which goes first
    for name, argv in seq:
        res.setdefault((name, "cold"), []).append(timed(argv, fresh()))
    for name, argv in seq:
        res.setdefault((name, "warm"), []).append(timed(argv, warm))
    res.setdefault(("ours detect --json --cached", "cached (hit)"), []).append(
        timed([ours, "detect", "--json", "--cached"], cached_env))
    res.setdefault(("ours detect --json --cached", "cold (miss, stores)"), []).append(
        timed([ours, "detect", "--json", "--cached"], fresh()))
    # The floor: starting a process at all, and our binary doing nothing.
    res.setdefault(("/bin/true", "floor"), []).append(timed(["/bin/true"], warm))
    res.setdefault(("ours --version", "floor"), []).append(timed([ours, "--version"], warm))

theirs_cold = statistics.median(res[("1.2.0 (ai-hwaccel, JSON)", "cold")])
print(f"runs per case: {runs}; medians in ms (min-max); ratio = median / 1.2.0 cold median")
print(f"| command | cache | median ms | min-max ms | vs 1.2.0 cold |")
print(f"| --- | --- | ---: | ---: | ---: |")
for (name, kind), v in res.items():
    m = statistics.median(v)
    print(f"| `{name}` | {kind} | {m:.1f} | {min(v):.1f}-{max(v):.1f} | {m / theirs_cold:.2f}x |")
PY
