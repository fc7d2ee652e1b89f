#!/usr/bin/env python3
"""Pin a runtime's argument definitions for the emitted-flag tests (issue 17 item 3).

llama.cpp: downloads the llama-cpp-python source distribution of the pinned
version from PyPI (its vendored llama.cpp has common/arg.cpp), checks the
sha256 PyPI publishes, and extracts without building or importing anything:
every option's spellings (`common_arg({"-c", "--ctx-size"}, "N", ...)`), its
value hint, and the KV cache types (`kv_cache_types`). Writes
crates/ai-hwaccel/tests/fixtures/runtimes/llama.cpp.json. Stdlib only; the
download is cached in $CACHE (default /work/cache/runtimes).

Usage: scripts/runtime-defs.py [VERSION]   (default: the pinned 0.3.36)
"""
import hashlib
import json
import os
import re
import sys
import tarfile
import urllib.request

VERSION = sys.argv[1] if len(sys.argv) > 1 else "0.3.36"
CACHE = os.environ.get("CACHE", "/work/cache/runtimes")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "crates", "ai-hwaccel", "tests", "fixtures", "runtimes", "llama.cpp.json")

meta = json.load(urllib.request.urlopen("https://pypi.org/pypi/llama-cpp-python/json"))
sdist = next(u for u in meta["releases"][VERSION] if u["packagetype"] == "sdist")
# Mirrors may answer with a URL relative to the index.
url = re.sub(r"^(\.\./)+packages/", "https://files.pythonhosted.org/packages/", sdist["url"])
os.makedirs(CACHE, exist_ok=True)
path = os.path.join(CACHE, sdist["filename"])
if not os.path.exists(path):
    urllib.request.urlretrieve(url, path)
digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
if digest != sdist["digests"]["sha256"]:
    sys.exit(f"{path}: sha256 {digest} is not PyPI's {sdist['digests']['sha256']}")

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
