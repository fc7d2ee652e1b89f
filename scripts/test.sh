#!/usr/bin/env bash
# The project's whole test suite. Installs (when run as root) the Debian
# packages whose real components the tests exercise, then runs formatting,
# lints and every test. Tests that need a component that is still missing
# print that they were skipped and why.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(pci.ids hwloc-nox vulkan-tools mesa-vulkan-drivers clinfo pocl-opencl-icd prometheus cmake g++)
PKGS+=(valgrind) # the C bindings' example runs under it (scripts/test-bindings.sh)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing test components: ${missing[*]}"
    apt-get update -qq || echo "apt-get update failed; continuing"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || echo "could not install ${missing[*]}; tests that need them will say they were skipped"
  fi
else
  echo "not root: not installing ${PKGS[*]}; tests that need them will say they were skipped"
fi

# Python tools the tests drive, from PyPI, in a virtual environment outside the
# repository: kubernetes-validate checks deploy/kubernetes against the Kubernetes
# schemas offline; grpcio serves a fake kubelet PodResources API to `serve`.
PY_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/ai-hwaccel-ci/pytools"
if [ ! -x "$PY_VENV/bin/kubernetes-validate" ] || ! "$PY_VENV/bin/python" -c "import grpc, gguf" 2>/dev/null; then
  if command -v python3 >/dev/null; then
    { python3 -m venv "$PY_VENV" && "$PY_VENV/bin/pip" install -q kubernetes-validate==1.37.0 grpcio==1.85.1 gguf==0.19.0 numpy==2.4.6; } \
      || echo "could not install kubernetes-validate/grpcio; tests that need them will say they were skipped"
  fi
fi
if [ -x "$PY_VENV/bin/python" ]; then
  export PATH="$PATH:$PY_VENV/bin"
  export AI_HWACCEL_TEST_PYTHON="$PY_VENV/bin/python"
fi

# A real llama.cpp: llama-server built from the llama.cpp source vendored in the
# llama-cpp-python source distribution on PyPI (pinned; the version the emitted
# flags are checked against), with its RPC backend (ggml-rpc-server processes
# on this machine are the two devices of the layer-split test), cached outside
# the repository (~5 min on 2 cores the first time). The end-to-end test (crates/ai-hwaccel-cli/tests/llamacpp.rs)
# runs the planner's emitted command on it; without it that test says it skipped.
LLAMA_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ai-hwaccel-ci/llama.cpp-0.3.36"
if { [ ! -x "$LLAMA_CACHE/bin/llama-server" ] || [ ! -x "$LLAMA_CACHE/bin/llama-bench" ] || [ ! -x "$LLAMA_CACHE/bin/ggml-rpc-server" ] || [ ! -x "$LLAMA_CACHE/bin/llama-batched-bench" ] || [ ! -x "$LLAMA_CACHE/bin/llama-imatrix" ]; } && command -v cmake >/dev/null && [ -x "$PY_VENV/bin/pip" ]; then
  (
    set -e
    mkdir -p "$LLAMA_CACHE/dl"
    cd "$LLAMA_CACHE"
    "$PY_VENV/bin/pip" download -q --no-deps --no-binary :all: -d dl llama-cpp-python==0.3.36
    rm -rf src && mkdir src
    tar -xzf dl/llama_cpp_python-0.3.36.tar.gz -C src --strip-components=3 llama_cpp_python-0.3.36/vendor/llama.cpp
    cmake -S src -B build -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
      -DGGML_RPC=ON >/dev/null
    cmake --build build --target llama-server llama-quantize llama-imatrix llama-bench llama-batched-bench ggml-rpc-server -j"$(nproc)" >/dev/null
    install -D -m 0755 build/bin/llama-server bin/llama-server
    install -D -m 0755 build/bin/llama-quantize bin/llama-quantize
    install -D -m 0755 build/bin/llama-imatrix bin/llama-imatrix
    install -D -m 0755 build/bin/llama-bench bin/llama-bench
    install -D -m 0755 build/bin/ggml-rpc-server bin/ggml-rpc-server
    install -D -m 0755 build/bin/llama-batched-bench bin/llama-batched-bench
    rm -rf build src
  ) || echo "could not build llama-server; the llama.cpp end-to-end test will say it was skipped"
fi
[ -x "$LLAMA_CACHE/bin/llama-server" ] && export AI_HWACCEL_LLAMA_SERVER="$LLAMA_CACHE/bin/llama-server"
[ -x "$LLAMA_CACHE/bin/llama-quantize" ] && export AI_HWACCEL_LLAMA_QUANTIZE="$LLAMA_CACHE/bin/llama-quantize"
[ -x "$LLAMA_CACHE/bin/llama-imatrix" ] && export AI_HWACCEL_LLAMA_IMATRIX="$LLAMA_CACHE/bin/llama-imatrix"
[ -x "$LLAMA_CACHE/bin/llama-bench" ] && export AI_HWACCEL_LLAMA_BENCH="$LLAMA_CACHE/bin/llama-bench"
[ -x "$LLAMA_CACHE/bin/ggml-rpc-server" ] && export AI_HWACCEL_LLAMA_RPC_SERVER="$LLAMA_CACHE/bin/ggml-rpc-server"
[ -x "$LLAMA_CACHE/bin/llama-batched-bench" ] && export AI_HWACCEL_LLAMA_BATCHED_BENCH="$LLAMA_CACHE/bin/llama-batched-bench"

# One full build: incremental state would double the disk it takes.
export CARGO_INCREMENTAL=0
df -h . 2>/dev/null | tail -1 | awk '{print "disk free before the build: " $4}' || true

cargo fmt --all -- --check
# The scoreboard calibration rows are what scripts/scoreboard.py makes of their pinned source.
python3 scripts/scoreboard.py --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --all-targets --locked
cargo test --doc --locked
# Library examples: built by --all-targets above; run each (detect reads this machine).
for ex in detect plan train; do cargo run -q --locked -p ai-hwaccel --example "$ex" >/dev/null; done
# The C and Python bindings end to end (each part says when it is skipped).
scripts/test-bindings.sh
# Rustdoc must build without warnings (broken links, bad HTML).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked -q
du -sh target 2>/dev/null | awk '{print "build directory: " $1}' || true
