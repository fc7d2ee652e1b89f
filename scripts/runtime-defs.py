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

def fetch_sdist(package, version, packagetype="sdist"):
    """The cached file of package==version (its source distribution, or
    its wheel with packagetype="bdist_wheel"), sha256 checked."""
    meta = json.load(urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json"))
    sdist = next(u for u in meta["releases"][version] if u["packagetype"] == packagetype)
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
    argparse_src = t.extractfile(f"{root}/utils/argparse_utils.py").read().decode()
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
# `vllm serve --config FILE.yaml`: FlexibleArgumentParser pulls the file's
# keys in as `--key value` (load_config_file). A parser flag, not an
# EngineArgs field, so it is recorded apart.
parser_flags = []
if '"--config" in args' in argparse_src and "def load_config_file" in argparse_src:
    parser_flags.append("--config")
else:
    sys.exit("vLLM: --config (FlexibleArgumentParser.load_config_file) not found")
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
            "parser_flags": parser_flags,
            "parser_source_file": f"{root}/utils/argparse_utils.py (FlexibleArgumentParser: --config, load_config_file)",
            "kv_cache_dtypes": cache_dtypes,
        },
        f,
        indent=1,
    )
    f.write("\n")
print(f"{out}: {len(fields)} flags, {len(cache_dtypes)} cache dtypes")

# --- SGLang -----------------------------------------------------------------
# SGLang 0.5.x builds its CLI from dataclasses (sglang/srt/arg_groups/fields/
# *.py): every field annotated `A[T, "help"]` or `A[T, Arg(...)]` becomes
# `--field-name` (or `Arg(cli_name=...)`) plus `Arg(aliases=[...])`, unless
# `Arg(no_cli=True)` (arg_groups/arg_utils.py, add_cli_args_from_dataclass);
# `choices=[...]` or a Literal type closes the value set. Flags registered by
# hand (`parser.add_argument("--x", ...)` anywhere under sglang/srt) are added.
# Read from the wheel of the pinned version (PyPI, sha256 checked); nothing
# is imported.
SGLANG_VERSION = os.environ.get("SGLANG_VERSION", "0.5.23")


def literal_strings(node):
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


import zipfile

spath, swhl, sdigest = fetch_sdist("sglang", SGLANG_VERSION, "bdist_wheel")
sflags, schoices = set(), {}
with zipfile.ZipFile(spath) as z:
    for name in z.namelist():
        if not (name.startswith("sglang/srt/") and name.endswith(".py")):
            continue
        tree = ast.parse(z.read(name).decode())
        for node in ast.walk(tree):
            # Dataclass fields with A[T, ...] annotations (arg_groups/fields).
            if (
                name.startswith("sglang/srt/arg_groups/fields/")
                and isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(node.annotation, ast.Subscript)
                and isinstance(node.annotation.value, ast.Name)
                and node.annotation.value.id == "A"
                and isinstance(node.annotation.slice, ast.Tuple)
                and len(node.annotation.slice.elts) >= 2
            ):
                typ, meta = node.annotation.slice.elts[0], node.annotation.slice.elts[1]
                names = ["--" + node.target.id.replace("_", "-")]
                choices = None
                if isinstance(meta, ast.Call):
                    kw = {k.arg: k.value for k in meta.keywords}
                    if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value is True:
                        continue
                    if isinstance(kw.get("cli_name"), ast.Constant):
                        names[0] = kw["cli_name"].value
                    names += literal_strings(kw.get("aliases")) or []
                    choices = literal_strings(kw.get("choices"))
                elif not (isinstance(meta, ast.Constant) and isinstance(meta.value, str)):
                    continue
                if choices is None and isinstance(typ, ast.Subscript) and getattr(typ.value, "id", "") == "Literal":
                    choices = literal_strings(typ.slice) or (
                        [typ.slice.value] if isinstance(typ.slice, ast.Constant) else None
                    )
                for n in names:
                    sflags.add(n)
                    if choices:
                        schoices[n] = choices
            # Hand-registered flags.
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
                        sflags.add(a.value)
if not {"--tp-size", "--mem-fraction-static", "--context-length"} <= sflags:
    sys.exit("SGLang: the expected flags were not found; the CLI layout changed")
out = os.path.join(os.path.dirname(OUT), "sglang.json")
with open(out, "w") as f:
    json.dump(
        {
            "runtime": "sglang",
            "package": "sglang",
            "version": SGLANG_VERSION,
            "wheel": swhl["filename"],
            "sha256": sdigest,
            "source_file": "sglang/srt/arg_groups/fields/*.py (A[T, Arg(...)] fields), add_argument calls under sglang/srt",
            "flags": sorted(sflags),
            "choices": dict(sorted(schoices.items())),
        },
        f,
        indent=1,
    )
    f.write("\n")
print(f"{out}: {len(sflags)} flags, {len(schoices)} with closed value sets")

# --- DeepSpeed and accelerate (train --emit) --------------------------------
# DeepSpeed: the config keys of deepspeed/runtime/constants.py,
# zero/config.py and activation_checkpointing/config.py (every module-level
# `NAME = "key"` string), the pydantic fields of the ZeRO config
# (runtime/zero/config.py DeepSpeedZeroConfig), of the offload configs
# (runtime/zero/offload_config.py) with OffloadDeviceEnum's values, and of the
# bf16/fp16 configs (runtime/precision_config.py). accelerate: the fields of
# its config file dataclasses (commands/config/config_args.py BaseConfig and
# ClusterConfig) and the values of DistributedType and PrecisionType
# (utils/dataclasses.py). Read without importing.
DEEPSPEED_VERSION = os.environ.get("DEEPSPEED_VERSION", "0.19.8")
ACCELERATE_VERSION = os.environ.get("ACCELERATE_VERSION", "1.15.0")


def class_fields(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return [
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            ]
    sys.exit(f"class {name} not found")


def enum_values(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return [
                s.value.value
                for s in node.body
                if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
            ]
    sys.exit(f"enum {name} not found")


dpath, dsdist, ddigest = fetch_sdist("deepspeed", DEEPSPEED_VERSION)
droot = f"deepspeed-{DEEPSPEED_VERSION}/deepspeed/runtime"
with tarfile.open(dpath) as t:
    read = lambda rel: ast.parse(t.extractfile(f"{droot}/{rel}").read().decode())
    consts = read("constants.py")
    act = read("activation_checkpointing/config.py")
    zero = read("zero/config.py")
    offload = read("zero/offload_config.py")
    precision = read("precision_config.py")
keys = sorted(
    {
        n.value.value
        for tree in (consts, zero, act)
        for n in tree.body
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
        and all(isinstance(tg, ast.Name) and tg.id.isupper() for tg in n.targets)
        and re.fullmatch(r"[a-z][a-z0-9_]*", n.value.value)
    }
)
ds = {
    "runtime": "deepspeed",
    "package": "deepspeed",
    "version": DEEPSPEED_VERSION,
    "sdist": dsdist["filename"],
    "sha256": ddigest,
    "source_file": f"{droot}/constants.py, zero/config.py, activation_checkpointing/config.py (module constants), zero/config.py, zero/offload_config.py, precision_config.py (fields)",
    "top_level_keys": keys,
    "zero_optimization": class_fields(zero, "DeepSpeedZeroConfig"),
    "offload_param": class_fields(offload, "DeepSpeedZeroOffloadParamConfig"),
    "offload_optimizer": class_fields(offload, "DeepSpeedZeroOffloadOptimizerConfig"),
    "offload_devices": enum_values(offload, "OffloadDeviceEnum"),
    "bf16": class_fields(precision, "DeepSpeedBF16Config"),
    "fp16": class_fields(precision, "DeepSpeedFP16Config"),
}
apath, awhl, adigest = fetch_sdist("accelerate", ACCELERATE_VERSION, "bdist_wheel")
with zipfile.ZipFile(apath) as z:
    cargs = ast.parse(z.read("accelerate/commands/config/config_args.py").decode())
    dcls = ast.parse(z.read("accelerate/utils/dataclasses.py").decode())
acc = {
    "runtime": "accelerate",
    "package": "accelerate",
    "version": ACCELERATE_VERSION,
    "wheel": awhl["filename"],
    "sha256": adigest,
    "source_file": "accelerate/commands/config/config_args.py (BaseConfig, ClusterConfig), accelerate/utils/dataclasses.py (DistributedType, PrecisionType)",
    "config_keys": sorted(set(class_fields(cargs, "BaseConfig") + class_fields(cargs, "ClusterConfig"))),
    "distributed_types": enum_values(dcls, "DistributedType"),
    "mixed_precision": enum_values(dcls, "PrecisionType"),
}
for name, obj in (("deepspeed.json", ds), ("accelerate.json", acc)):
    out = os.path.join(os.path.dirname(OUT), name)
    with open(out, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    print(f"{out}: written")
