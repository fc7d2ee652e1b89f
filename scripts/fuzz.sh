#!/usr/bin/env bash
# Run fuzz targets for SECONDS each (default 60), seeded from the real
# captures in crates/ai-hwaccel/tests/fixtures:
#   scripts/fuzz.sh [SECONDS [TARGET...]]   (no TARGET: every target in fuzz/)
# FUZZ_JOBS=N runs N targets at a time (default 1). Needs the nightly
# toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Prints one line per
# target as it ends: seconds, executions, and whether a crash was found (the
# input is then under fuzz/artifacts/TARGET/). Figures go in docs/robustness.md.
set -euo pipefail
secs="${1:-60}"
shift || true
jobs="${FUZZ_JOBS:-1}"
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

if [ "$#" -gt 0 ]; then targets="$*"; else targets=$(cargo +nightly fuzz list); fi
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
        model_safetensors_index)
            seed "$t" $(find "$fx/models" -name '*.index.json')
            # The layout transformers writes, for a start.
            printf '{"metadata": {"total_size": 96}, "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors", "model.embed_tokens.weight": "model-00001-of-00002.safetensors"}}' \
                > "corpus/$t/seed-index.json" ;;
        model_gguf) seed "$t" $(find "$fx/models" -name '*.gguf') ;;
        gpu_metrics) seed "$t" $(find "$fx/sysfs-gpu-telemetry" -name 'gpu_metrics') ;;
        runtime_log_*|llama_bench|serve_bench) seed "$t" "$fx/runtime-logs" ;;
        llama_batched_bench) seed "$t" "$fx/lent-h100" ;;
        kernel_log) seed "$t" "$fx/kernel-log" ;;
        price_file) seed "$t" "$fx/prices" ;;
        registry_json)
            # Registries detected from the fixture roots, where the CLI is built.
            mkdir -p "corpus/$t"
            for cli in "$root/target/release/ai-hwaccel" "$root/target/debug/ai-hwaccel"; do
                [ -x "$cli" ] || continue
                for r in "$fx"/roots/*/; do
                    "$cli" detect --json --no-exec --root "$r" > "corpus/$t/$(basename "$r").json" 2>/dev/null || true
                done
                break
            done ;;
        host_files) seed "$t" "$fx/sysctl" "$fx/ibstat" $(find "$fx/roots" -path '*/proc/*' -name 'cpuinfo' -o -path '*/proc/*' -name 'meminfo' -o -name cgroup) ;;
    esac
done

# FUZZ_SKIP_BUILD=1: run the targets as last built.
[ -n "${FUZZ_SKIP_BUILD:-}" ] || cargo +nightly fuzz build -O >/dev/null
bin="$root/fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"

# One target: the built binary run directly (no rebuild per run), libFuzzer's
# own time limit, its "Done N runs" line for the execution count.
run_one() {
    local t="$1" log status execs
    log="$(mktemp)"
    status=ok
    mkdir -p "artifacts/$t" "corpus/$t"
    if ! "$bin/$t" "corpus/$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
            -max_len=1048576 -artifact_prefix="artifacts/$t/" >"$log" 2>&1; then
        status="FINDING (see fuzz/artifacts/$t/)"
    fi
    execs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo "?")
    printf '%-40s %6ss %12s execs  %s\n' "$t" "$secs" "$execs" "$status"
    rm -f "$log"
}

running=0
for t in $targets; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait
