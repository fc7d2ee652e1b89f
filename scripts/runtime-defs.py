#!/usr/bin/env python3
"""Pin runtimes' argument definitions for the emitted-flag tests (issue 17 item 3).

vLLM: from the vllm source distribution of the pinned version (PyPI, sha256
checked), Python's ast over vllm/engine/arg_utils.py: every field of the
EngineArgs dataclass (each is a `--field-name` flag of `vllm serve`) and the
CacheDType literal of vllm/config/cache.py (the `--kv-cache-dtype` values).
Writes tests/fixtures/runtimes/vllm.json.

llama.cpp: downloads the llama-cpp-python source distribution of the pinned
version from PyPI (its vendored llama.cpp has common/arg.cpp), checks the
sha256 PyPI publishes, and extracts without building or importing anything:
every option's spellings (`common_arg({"-c", "--ctx-size"}, "N", ...)`), its
value hint, and the KV cache types (`kv_cache_types`). Writes
crates/ai-hwaccel/tests/fixtures/runtimes/llama.cpp.json. Stdlib only; the
download is cached in $CACHE (default /work/cache/runtimes).

Usage: scripts/runtime-defs.py [LLAMA_CPP_PYTHON_VERSION [VLLM_VERSION]]
(default: the pinned 0.3.36 and 0.33.0)
"""
import ast
import hashlib
import json
import os
import re
import sys
import tarfile
import urllib.request

VERSION = sys.argv[1] if len(sys.argv) > 1 else "0.3.36"
VLLM_VERSION = sys.argv[2] if len(sys.argv) > 2 else "0.33.0"
CACHE = os.environ.get("CACHE", "/work/cache/runtimes")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "crates", "ai-hwaccel", "tests", "fixtures", "runtimes", "llama.cpp.json")

def fetch_sdist(package, version):
    """The cached source distribution of package==version, sha256 checked."""
    meta = json.load(urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json"))
    sdist = next(u for u in meta["releases"][version] if u["packagetype"] == "sdist")
    # Mirrors may answer with a URL relative to the index.
    url = re.sub(r"^(\.\./)+packages/", "https://files.pythonhosted.org/packages/", sdist["url"])
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, sdist["filename"])
    if not os.path.exists(path):
        urllib.request.urlretrieve(url, path)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if digest != sdist["digests"]["sha256"]:
        sys.exit(f"{path}: sha256 {digest} is not PyPI's {sdist['digests']['sha256']}")
    return path, sdist, digest


path, sdist, digest = fetch_sdist("llama-cpp-python", VERSION)

member = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/common/arg.cpp"
with tarfile.open(path) as t:
    src = t.extractfile(member).read().decode()

options = []
for m in re.finditer(r'common_arg\(\s*\{([^}]*)\}\s*,\s*("(?:[^"\\]|\\.)*")?', src):
    names = re.findall(r'"([^"]+)"', m.group(1))
    if not names:
        continue
    hint = json.loads(m.group(2)) if m.group(2) else None
    options.append({"names": names, "value_hint": hint})
types = re.search(r"kv_cache_types\s*=\s*\{([^}]*)\}", src)
kv = [t.strip().removeprefix("GGML_TYPE_").lower() for t in types.group(1).split(",") if t.strip()]

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as f:
    json.dump(
        {
            "runtime": "llama.cpp",
            "package": "llama-cpp-python",
            "version": VERSION,
            "sdist": sdist["filename"],
            "sha256": digest,
            "source_file": member,
            "kv_cache_types": kv,
            "options": options,
        },
        f,
        indent=1,
    )
    f.write("\n")
print(f"{OUT}: {len(options)} options, kv cache types {kv}")

# vLLM
path, sdist, digest = fetch_sdist("vllm", VLLM_VERSION)
root = f"vllm-{VLLM_VERSION}/vllm"
with tarfile.open(path) as t:
    args_src = t.extractfile(f"{root}/engine/arg_utils.py").read().decode()
    cache_src = t.extractfile(f"{root}/config/cache.py").read().decode()
fields = []
for node in ast.parse(args_src).body:
    if isinstance(node, ast.ClassDef) and node.name == "EngineArgs":
        fields = [b.target.id for b in node.body if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name)]
cache_dtypes = []
for node in ast.parse(cache_src).body:
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "CacheDType" for t in node.targets):
        cache_dtypes = [e.value for e in node.value.slice.elts if isinstance(e, ast.Constant)]
if not fields or not cache_dtypes:
    sys.exit("vLLM: EngineArgs or CacheDType not found")
out = os.path.join(os.path.dirname(OUT), "vllm.json")
with open(out, "w") as f:
    json.dump(
        {
            "runtime": "vllm",
            "package": "vllm",
            "version": VLLM_VERSION,
            "sdist": sdist["filename"],
            "sha256": digest,
            "source_file": f"{root}/engine/arg_utils.py (EngineArgs), {root}/config/cache.py (CacheDType)",
            "flags": ["--" + x.replace("_", "-") for x in fields],
            "kv_cache_dtypes": cache_dtypes,
        },
        f,
        indent=1,
    )
    f.write("\n")
print(f"{out}: {len(fields)} flags, {len(cache_dtypes)} cache dtypes")
