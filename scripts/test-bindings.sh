#!/usr/bin/env bash
# The bindings' end-to-end tests (issue 21), run by scripts/test.sh after
# the workspace's cargo tests:
#   c:      the C example (crates/ai-hwaccel-c/examples/example.c) compiled
#           with cc against the static library and run under valgrind: no
#           memory error, no definite or indirect leak, and what is still
#           allocated at exit (the library's lazily built static tables) is
#           the same after 1 and after 3 rounds of every call (nothing grows).
#   python: the wheel built with maturin (PyPI), installed into a fresh
#           virtual environment, imported and run once on this machine
#           (no GPU or NVML needed), then pytest (the Python results equal
#           the CLI's --json for the same inputs) and mypy --strict on the
#           examples. maturin and mypy come from PyPI into a tools venv
#           under $AI_HWACCEL_TEST_CACHE (default ~/.cache/ai-hwaccel-test),
#           pytest and pandas into the fresh one; pip's download cache is
#           kept there too.
# Each part prints "skipped: why" when a component is missing.
# Usage: scripts/test-bindings.sh [c|python]...   (default: both)
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(c python)
TARGET=${CARGO_TARGET_DIR:-target}
ROOT_FIXTURE=crates/ai-hwaccel/tests/fixtures/roots/mi300x-spx-8gpu

c_part() {
  local start=$SECONDS
  if ! command -v cc >/dev/null; then echo "c bindings: skipped: no C compiler (cc)"; return; fi
  cargo build -q --locked -p ai-hwaccel-c
  local tmp; tmp=$(mktemp -d)
  cc -Wall -Wextra -Werror -std=c11 -o "$tmp/example" crates/ai-hwaccel-c/examples/example.c \
    -Icrates/ai-hwaccel-c/include "$TARGET/debug/libai_hwaccel_c.a" -lpthread -ldl -lm
  "$tmp/example" "$ROOT_FIXTURE" >/dev/null
  if ! command -v valgrind >/dev/null; then
    echo "c bindings: example ran; valgrind part skipped: valgrind is not installed (Debian package valgrind)"
    rm -rf "$tmp"; return
  fi
  local n
  for n in 1 3; do
    valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=1 \
      --log-file="$tmp/vg$n.log" "$tmp/example" "$ROOT_FIXTURE" "$n" >/dev/null \
      || { cat "$tmp/vg$n.log"; echo "c bindings: valgrind found errors or leaks ($n rounds)"; exit 1; }
    grep -E "(possibly lost|still reachable|in use at exit):" "$tmp/vg$n.log" \
      | sed 's/^==[0-9]*== *//' >"$tmp/sum$n"
  done
  if ! diff "$tmp/sum1" "$tmp/sum3" >/dev/null; then
    echo "c bindings: memory still allocated at exit grows with the number of calls:"
    diff "$tmp/sum1" "$tmp/sum3" || true
    exit 1
  fi
  echo "c bindings: example under valgrind: 0 errors, 0 definitely/indirectly lost; at exit after 1 and 3 rounds alike: $(tr '\n' ' ' <"$tmp/sum1")($((SECONDS - start)) s)"
  rm -rf "$tmp"
}

python_part() {
  local start=$SECONDS
  local cache=${AI_HWACCEL_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ai-hwaccel-test}
  local tools=$cache/tools-venv
  export PIP_CACHE_DIR=$cache/pip PIP_DISABLE_PIP_VERSION_CHECK=1
  if ! command -v python3 >/dev/null || ! python3 -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
    echo "python bindings: skipped: no python3 >= 3.9 with venv"; return
  fi
  if ! "$tools/bin/maturin" --version 2>/dev/null | grep -q " 1.16.0" || [ ! -x "$tools/bin/mypy" ]; then
    mkdir -p "$cache"
    if ! { python3 -m venv "$tools" && "$tools/bin/pip" install -q maturin==1.16.0 mypy==2.4.1; }; then
      echo "python bindings: skipped: could not install maturin and mypy from PyPI into $tools"
      return
    fi
  fi
  local tmp; tmp=$(mktemp -d)
  # The dev profile reuses the library cargo test built; only the extension links anew.
  if ! "$tools/bin/maturin" build -q --locked --profile dev -m crates/ai-hwaccel-py/Cargo.toml \
    -o "$tmp/wheels" -i "$(command -v python3)" >"$tmp/maturin.log" 2>&1; then
    cat "$tmp/maturin.log"; echo "python bindings: maturin build failed"; exit 1
  fi
  local wheel; wheel=$(ls "$tmp"/wheels/ai_hwaccel-*.whl)
  python3 -m venv "$tmp/venv"
  "$tmp/venv/bin/pip" install -q --no-index "$wheel"
  # A fresh environment: it imports and detects with nothing else installed.
  (cd "$tmp" && "$tmp/venv/bin/python" -c 'import ai_hwaccel; print("python bindings: wheel", ai_hwaccel.__version__, "imports in a fresh venv and detects:", ai_hwaccel.detect())')
  if ! "$tmp/venv/bin/pip" install -q pytest==9.2.0 pandas==3.1.1; then
    echo "python bindings: pytest part skipped: could not install pytest and pandas from PyPI"
    rm -rf "$tmp"; return
  fi
  cargo build -q --locked -p ai-hwaccel-cli
  # CARGO_TARGET_DIR may be absolute (a cache outside the checkout) or
  # relative to the checkout; a wrong path would skip the CLI-parity tests.
  local target=${CARGO_TARGET_DIR:-target}
  case $target in /*) ;; *) target=$PWD/$target ;; esac
  AI_HWACCEL_CLI=$target/debug/ai-hwaccel \
    "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider crates/ai-hwaccel-py/tests
  "$tools/bin/mypy" --strict --cache-dir "$tmp/mypy-cache" --python-executable "$tmp/venv/bin/python" crates/ai-hwaccel-py/examples
  echo "python bindings: wheel, pytest and mypy --strict passed ($((SECONDS - start)) s)"
  rm -rf "$tmp"
}

for p in "${parts[@]}"; do
  case $p in
    c) c_part ;;
    python) python_part ;;
    *) echo "unknown part $p (c, python)"; exit 2 ;;
  esac
done
