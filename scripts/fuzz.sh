#!/usr/bin/env bash
# Run every fuzz target in fuzz/ for SECONDS each (default 60), seeded from
# the real captures in crates/ai-hwaccel/tests/fixtures. Needs the nightly
# toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Prints one line per
# target: seconds, executions, and whether a crash was found (the input is
# then under fuzz/artifacts/TARGET/). Figures go in docs/robustness.md.
set -euo pipefail
secs="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
fx="$root/crates/ai-hwaccel/tests/fixtures"
cd "$root/fuzz"

# Seed corpus/TARGET from the fixture folders that hold that input kind.
seed() {
    local target="$1"; shift
    mkdir -p "corpus/$target"
    for src in "$@"; do
        [ -e "$src" ] || continue
        find "$src" -type f ! -name '*.md' -size -1M -exec cp -n {} "corpus/$target/" \; 2>/dev/null || true
    done
}

targets=$(cargo +nightly fuzz list)
for t in $targets; do
    case "$t" in
        format_*)
            name="${t#format_}"; name="${name//_/-}"
            dirs=()
            for d in "$fx"/*/; do
                d="${d%/}"; base="$(basename "$d")"
                case "$name" in "$base"|"$base"-*) dirs+=("$d") ;; esac
            done
            seed "$t" "${dirs[@]}" ;;
        model_hf_config) seed "$t" $(find "$fx/models" -name 'config.json') ;;
        model_safetensors_header) seed "$t" $(find "$fx/models" -name '*.safetensors') ;;
        model_gguf) seed "$t" $(find "$fx/models" -name '*.gguf') ;;
        gpu_metrics) seed "$t" $(find "$fx/sysfs-gpu-telemetry" -name 'gpu_metrics') ;;
        runtime_log_*|llama_bench) seed "$t" "$fx/runtime-logs" ;;
    esac
done

cargo +nightly fuzz build -O >/dev/null
for t in $targets; do
    log="$(mktemp)"
    status=ok
    if ! cargo +nightly fuzz run -O "$t" -- -max_total_time="$secs" -rss_limit_mb=2048 \
            -timeout=10 -max_len=1048576 >"$log" 2>&1; then
        status="FINDING (see fuzz/artifacts/$t/)"
    fi
    execs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo "?")
    printf '%-40s %6ss %12s execs  %s\n' "$t" "$secs" "$execs" "$status"
    rm -f "$log"
done
