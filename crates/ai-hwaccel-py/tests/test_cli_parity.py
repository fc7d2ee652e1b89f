"""The Python results equal the CLI's --json output for the same inputs."""

import ast
import json
import pathlib
import re
from typing import Any, Dict, List

import pytest

import ai_hwaccel
from ai_hwaccel import _native
from conftest import REPO, ROOTS, cli_json, root, run_cli, without_timings

# --- detection -------------------------------------------------------------


@pytest.mark.parametrize("name", ROOTS)
def test_detect_fake_root(cli, name):
    py = ai_hwaccel.detect(root=root(name), no_exec=True)
    expected = cli_json(cli, "detect", "--root", root(name), "--no-exec", "--json")
    assert without_timings(py.to_dict()) == without_timings(expected)
    assert [d.id for d in py.devices] == [d["id"] for d in expected["devices"]]
    assert len(py.accelerators()) == expected["summary"]["accelerator_count"]


def test_detect_options(cli):
    r = root("mi300x-spx-8gpu")
    py = ai_hwaccel.detect(root=r, no_exec=True, family=["cpu"], backends="pci,system")
    expected = cli_json(
        cli, "detect", "--root", r, "--no-exec", "--family", "cpu", "--backends", "pci,system", "--json"
    )
    assert without_timings(py.to_dict()) == without_timings(expected)
    assert [d.family for d in py.devices] == ["cpu"]


@pytest.mark.parametrize("name", ["mi300x-spx-8gpu", "two-socket-pci"])
def test_topology_fake_root(cli, name):
    py = ai_hwaccel.topology(root=root(name), no_exec=True)
    assert py == cli_json(cli, "topo", "--root", root(name), "--no-exec", "--json")


def test_topology_from_registry(cli, tmp_path):
    reg = tmp_path / "reg.json"
    reg.write_text(ai_hwaccel.detect(root=root("mi300x-spx-8gpu"), no_exec=True).to_json())
    assert ai_hwaccel.topology(registry=reg) == cli_json(cli, "topo", "--registry", str(reg), "--json")


# --- specs and models ------------------------------------------------------


@pytest.mark.parametrize("query", [None, "h100-sxm", "NVIDIA H100 80GB HBM3", "10de:2330", "amd", "gfx942"])
def test_specs(cli, query):
    args = ["specs"] + ([query] if query else []) + ["--json"]
    assert ai_hwaccel.specs(query) == cli_json(cli, *args)


@pytest.mark.parametrize("query", [None, "epyc-9654", "AMD EPYC 9654 96-Core Processor", "zen4"])
def test_specs_cpu(cli, query):
    args = ["specs", "--cpu"] + ([query] if query else []) + ["--json"]
    assert ai_hwaccel.specs(query, cpu=True) == cli_json(cli, *args)


def test_models_and_model(cli):
    catalog = ai_hwaccel.models()
    assert catalog == cli_json(cli, "model", "--list", "--json")
    assert len(catalog) > 10
    for name in ["llama-3.1-8b", "deepseek-v3", catalog[-1]["id"], "7b"]:
        assert ai_hwaccel.model(name) == cli_json(cli, "model", name, "--json"), name


# --- planning --------------------------------------------------------------

PLANS: List[Dict[str, Any]] = [
    {"model": "llama-3.1-70b", "devices": "4xh100-sxm"},
    {"model": "llama-3.1-70b", "devices": "8xa100-80gb", "quant": "int4", "context": 32768, "batch": 8},
    {"model": "llama-3.1-8b", "devices": "2xl4", "kv_dtype": "fp8", "objective": "throughput", "max_plans": 2},
    {"model": "deepseek-v3", "devices": "8xh200", "runtime": "vllm", "memory_utilization": 0.85},
    {"model": "13b", "devices": "1xrtx-4090", "prefill_chunk": 512, "decode_efficiency": 0.7,
     "prefill_efficiency": 0.4},
    {"model": "llama-3.1-405b", "devices": "1xh100-sxm"},  # does not fit: advice
    {"model": "llama-3.1-8b", "devices": "1xh100-sxm", "emit": "vllm"},
    {"model": "llama-3.1-70b", "devices": "4xh100-sxm", "emit": "sglang", "plan": 2},
    {"model": "llama-3-8b", "devices": "1xrtx-4090", "runtime": "llama.cpp", "runtime_build": "2024-05",
     "unfused_attention": True},
    {"model": "llama-3-8b", "devices": "1xrtx-3090", "runtime": "llama.cpp", "runtime_build": "2024-06",
     "quant": "q6_k", "cuda_force_mmq": True},
    # Without CUDA graphs: the eager per-layer time and the emitted switch.
    {"model": "llama-3.1-8b", "devices": "2xrtx-4090", "runtime": "vllm", "enforce_eager": True,
     "emit": "vllm"},
    # llama.cpp's micro-batch: compute buffers, expert reads per micro-batch, -ub.
    {"model": "qwen3-30b-a3b", "devices": "1xrtx-4090", "runtime": "llama.cpp", "quant": "q4_k_m",
     "ubatch": 2048},
    # Latency targets on a closed loop: the served TTFT bounds the batch.
    {"model": "llama-3.1-70b", "devices": "8xh100-sxm", "runtime": "sglang", "input_len": 2048,
     "output_len": 256, "tpot_ms": 30, "ttft_ms": 150},
]


def to_args(options: Dict[str, Any]) -> List[str]:
    args: List[str] = []
    for k, v in options.items():
        if k == "model":
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            args.append(flag)
        elif isinstance(v, list):
            args += [flag, ",".join(v)]
        else:
            args += [flag, str(v)]
    return args


@pytest.mark.parametrize("options", PLANS, ids=lambda o: " ".join(f"{k}={v}" for k, v in o.items()))
def test_plan(cli, options):
    opts = dict(options)
    model = opts.pop("model")
    py = ai_hwaccel.plan(model, **opts)
    assert py == cli_json(cli, "plan", model, *to_args(options), "--json")


def test_emit_is_plan_with_emit(cli):
    assert ai_hwaccel.emit("llama-3.1-8b", "trtllm", devices="1xl4") == cli_json(
        cli, "plan", "llama-3.1-8b", "--devices", "1xl4", "--emit", "trtllm", "--json"
    )
    # The runtime's refusal is the CLI's exit 1.
    code, _, err = run_cli(cli, "plan", "llama-3.1-8b", "--devices", "1xl4", "--emit", "llama.cpp", "--json")
    assert code == 1
    with pytest.raises(ai_hwaccel.Error, match="GGUF") as info:
        ai_hwaccel.emit("llama-3.1-8b", "llama.cpp", devices="1xl4")
    assert not isinstance(info.value, ValueError)


PRICES = pathlib.Path(__file__).resolve().parents[2] / "ai-hwaccel" / "tests" / "fixtures" / "prices"


@pytest.mark.parametrize("options", [
    {"model": "llama-3.1-70b", "cloud": True},
    {"model": "llama-3.1-8b", "cloud": True, "provider": "aws,testcloud", "price_file": str(PRICES / "fixed.csv"),
     "batch": 8, "objective": "throughput"},
    {"model": "llama-3.1-8b", "cloud": True, "provider": ["lambda", "oci"], "price_file": str(PRICES / "fixed.toml")},
], ids=["all", "csv", "toml"])
def test_plan_cloud(cli, options):
    opts = dict(options)
    model = opts.pop("model")
    assert ai_hwaccel.plan(model, **opts) == cli_json(cli, "plan", model, *to_args(options), "--json")


def test_plan_cloud_errors(cli):
    bad = str(PRICES / "bad-price.csv")
    code, _, err = run_cli(cli, "plan", "7b", "--cloud", "--price-file", bad, "--json")
    assert code == 1 and "price_per_hour_usd" in err
    with pytest.raises(ai_hwaccel.Error, match="bad-price.csv: line 2: field \"price_per_hour_usd\"") as info:
        ai_hwaccel.plan("7b", cloud=True, price_file=bad)
    assert not isinstance(info.value, ValueError)
    assert run_cli(cli, "plan", "7b", "--cloud", "--provider", "lamda", "--json")[0] == 2
    with pytest.raises(ValueError, match="did you mean lambda"):
        ai_hwaccel.plan("7b", cloud=True, provider="lamda")
    with pytest.raises(ValueError):
        ai_hwaccel.plan("7b", cloud=True, devices="1xl4")
    with pytest.raises(ValueError):
        ai_hwaccel.plan("7b", provider="aws")


def test_plan_from_registry_file(cli, tmp_path):
    reg = tmp_path / "reg.json"
    reg.write_text(run_cli(cli, "detect", "--root", root("mi300x-spx-8gpu"), "--no-exec", "--json")[1])
    for model in ["llama-3.1-8b", "70b"]:
        assert ai_hwaccel.plan(model, registry=reg) == cli_json(cli, "plan", model, "--registry", str(reg), "--json")
    assert ai_hwaccel.fit(registry=str(reg)) == cli_json(cli, "fit", "--registry", str(reg), "--json")


def test_offload_from_registry_file(cli, tmp_path):
    # Two Xeon Platinum 8480+ (theoretical bandwidth from the CPU table) and
    # GPUs: DeepSeek-V3 is a MoE expert offload (--n-cpu-moe), the rest the
    # layer split over every GPU.
    reg = tmp_path / "reg.json"
    reg.write_text(run_cli(cli, "detect", "--root", root("two-socket-pci"), "--no-exec", "--json")[1])
    for model, quant in [("deepseek-v3", "q2_k"), ("llama-3.1-405b", "q4_k")]:
        py = ai_hwaccel.plan(model, registry=reg, offload=True, quant=quant)
        assert py == cli_json(cli, "plan", model, "--registry", str(reg), "--offload", "--quant", quant, "--json")
    assert py["plans"] == [] or py["plans"][0].get("moe_offload") is None
    # fit --offload: the registry's two-socket host takes what the GPUs cannot.
    py_fit = ai_hwaccel.fit(registry=reg, offload=True)
    assert py_fit == cli_json(cli, "fit", "--registry", str(reg), "--offload", "--json")
    assert any(m["offload"] for m in py_fit["models"])


TRAINS: List[Dict[str, Any]] = [
    {"model": "7b", "devices": "8xa100-80gb", "zero": 3},
    {"model": "llama-3.1-8b", "devices": "1xh100-sxm", "method": "qlora", "lora_rank": 64,
     "lora_targets": ["q", "v"], "seq": 4096},
    {"model": "llama-3.1-70b", "devices": "16xh100-sxm", "tp": 8, "pp": 2, "sequence_parallel": True,
     "recompute": "selective", "micro_batch": 2, "grad_accum": 8, "optimizer": "adamw8bit"},
    {"model": "llama-3.1-8b", "devices": "8xh100-sxm", "method": "dpo", "zero": 2, "precision": "bf16",
     "attention": "eager", "offload": "optimizer", "mfu": 0.4, "fragmentation": 0.1,
     "framework_overhead": 536870912},
    {"model": "llama-3.1-8b", "devices": "8xh100-sxm", "method": "distill", "teacher": "llama-3.1-70b",
     "zero": 3},
    {"model": "deepseek-v3", "devices": "64xh100-sxm", "expert_parallel": 8, "zero": 1, "tp": 8,
     "method": "lora", "lora_experts": True, "dp": 8},
    {"model": "llama-3.1-8b", "devices": "8xh100-sxm", "zero": 3, "emit": "deepspeed"},
    {"model": "llama-3.1-8b", "devices": "8xh100-sxm", "zero": 2, "emit": "accelerate"},
]


@pytest.mark.parametrize("options", TRAINS, ids=lambda o: " ".join(f"{k}={v}" for k, v in o.items()))
def test_train(cli, options):
    opts = dict(options)
    model = opts.pop("model")
    py = ai_hwaccel.train(model, **opts)
    assert py == cli_json(cli, "train", model, *to_args(options), "--json")


def test_fit(cli):
    assert ai_hwaccel.fit(devices="2xl4", context=8192) == cli_json(
        cli, "fit", "--devices", "2xl4", "--context", "8192", "--json"
    )


def test_fit_filters(cli):
    py = ai_hwaccel.fit(devices="1xh100-sxm", use=["code", "chat"], min_params="8b", max_params=40_000_000_000)
    expected = cli_json(
        cli, "fit", "--devices", "1xh100-sxm", "--use", "code,chat", "--min-params", "8b",
        "--max-params", "40000000000", "--json",
    )
    assert py == expected
    assert [m["model"] for m in py["models"]] == ["codellama-34b", "qwen2.5-coder-32b"]


# --- errors: the same failures, the CLI's exit code as the exception ------

ERRORS = [
    (["plan", "7b", "--devices", "1xh100-sxm", "--batch", "0"], "plan", {"model": "7b", "devices": "1xh100-sxm", "batch": 0}),
    (["plan", "7b", "--devices", "3xnot-a-gpu"], "plan", {"model": "7b", "devices": "3xnot-a-gpu"}),
    (["plan", "7b", "--devices", "1xh100-sxm", "--quant", "int3"], "plan", {"model": "7b", "devices": "1xh100-sxm", "quant": "int3"}),
    (["plan", "1000t", "--devices", "1xh100-sxm"], "plan", {"model": "1000t", "devices": "1xh100-sxm"}),
    (["plan", "no-such-model-xyz", "--devices", "1xh100-sxm"], "plan", {"model": "no-such-model-xyz", "devices": "1xh100-sxm"}),
    (["train", "7b", "--devices", "1xh100-sxm", "--zero", "4"], "train", {"model": "7b", "devices": "1xh100-sxm", "zero": 4}),
    (["train", "7b", "--devices", "8xh100-sxm", "--tp", "3"], "train", {"model": "7b", "devices": "8xh100-sxm", "tp": 3}),
    (["specs", "zzzz-no-such-gpu", "--json"], "specs", {"query": "zzzz-no-such-gpu"}),
    (["detect", "--root", "/nonexistent/root", "--json"], "detect", {"root": "/nonexistent/root"}),
    (["detect", "--backends", "nvidiaa", "--json"], "detect", {"backends": "nvidiaa"}),
    (["fit", "--devices", "1xh100-sxm", "--use", "chatt", "--json"], "fit", {"devices": "1xh100-sxm", "use": "chatt"}),
    (["fit", "--devices", "1xh100-sxm", "--max-params", "lots", "--json"], "fit", {"devices": "1xh100-sxm", "max_params": "lots"}),
]


@pytest.mark.parametrize("args,command,options", ERRORS, ids=lambda x: " ".join(x) if isinstance(x, list) else None)
def test_errors_match_exit_codes(cli, args, command, options):
    code, _, err = run_cli(cli, *args)
    assert code in (1, 2), err
    func = getattr(ai_hwaccel, command)
    opts = dict(options)
    call_args = [opts.pop("model")] if "model" in opts else []
    with pytest.raises(ai_hwaccel.Error) as info:
        func(*call_args, **opts)
    if code == 2:
        assert isinstance(info.value, ValueError), info.value
    else:
        assert not isinstance(info.value, ValueError), info.value
    if "/nonexistent/" in " ".join(args):
        assert isinstance(info.value, FileNotFoundError)


def test_unknown_keyword_is_value_error():
    with pytest.raises(ValueError, match="batch"):
        ai_hwaccel.plan("7b", devices="1xh100-sxm", batchsize=2)
    with pytest.raises(ai_hwaccel.InvalidArgumentError, match="expected true or false"):
        ai_hwaccel.detect(no_exec="yes")
    with pytest.raises(FileNotFoundError):
        ai_hwaccel.plan("7b", registry="/nonexistent/registry.json")
    with pytest.raises(FileNotFoundError):
        ai_hwaccel.model("/nonexistent/dir/config.json")


# --- every CLI option is a keyword, with the CLI's default -----------------

# CLI options with no keyword, and why.
NOT_KEYWORDS = {
    "json": "the bindings always return the JSON",
    "help": "clap's help",
    "timings": "detect's table only (the JSON always has timings)",
    "list": "model --list is models()",
    "all": "fit --all lists non-fitting models in the table; the JSON always has every model",
}
COMMAND_OF = {"detect": "detect", "topo": "topology", "specs": "specs", "model": "model",
              "plan": "plan", "fit": "fit", "train": "train"}


def cli_options(cli, command: str) -> Dict[str, str]:
    """{option: default or ''} from `ai-hwaccel COMMAND --help`."""
    _, out, _ = run_cli(cli, command, "--help")
    options: Dict[str, str] = {}
    current = None
    for line in out.splitlines():
        m = re.match(r"\s+(?:-\w, )?--([a-z0-9-]+)", line)
        if m:
            current = m.group(1).replace("-", "_")
            options[current] = ""
        d = re.search(r"\[default: ([^\]]*)\]", line)
        if d and current:
            options[current] = d.group(1)
    return options


def native_keys() -> Dict[str, List[str]]:
    return dict(_native.commands())


@pytest.mark.parametrize("command", sorted(COMMAND_OF))
def test_every_cli_option_is_a_keyword(cli, command):
    keys = native_keys()[COMMAND_OF[command]]
    positional = {"plan": ["model"], "train": ["model"], "model": ["model"], "specs": ["query"]}
    missing = [o for o in cli_options(cli, command) if o not in keys and o not in NOT_KEYWORDS]
    assert not missing, f"{command}: CLI options without a keyword: {missing}"
    extra = [k for k in keys if k not in cli_options(cli, command) and k not in positional.get(command, [])]
    assert not extra, f"{command}: keywords the CLI does not have: {extra}"


def stub_signatures() -> Dict[str, Dict[str, Any]]:
    """{function: {keyword: default}} from __init__.pyi."""
    path = pathlib.Path(ai_hwaccel.__file__).with_name("__init__.pyi")
    tree = ast.parse(path.read_text())
    sigs: Dict[str, Dict[str, Any]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            names = [x.arg for x in a.args + a.kwonlyargs]
            defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults) + list(a.kw_defaults)
            sigs[node.name] = {
                ("from" if n == "from_" else n): (ast.literal_eval(d) if d is not None else "<required>")
                for n, d in zip(names, defaults)
            }
    return sigs


def test_stub_matches_native_keys_and_cli_defaults(cli):
    sigs = stub_signatures()
    for command, keys in native_keys().items():
        assert set(sigs[command]) == set(keys), command
    # emit launches one plan on devices: the cloud keys (which conflict with emit) are not its.
    cloud_keys = {"cloud", "provider", "price_file"}
    assert set(sigs["emit"]) == (set(sigs["plan"]) - {"emit", "runtime"} - cloud_keys) | {"runtime"}
    for cli_command, command in COMMAND_OF.items():
        for option, default in cli_options(cli, cli_command).items():
            if option in NOT_KEYWORDS or default == "":
                continue
            stub = sigs[command][option]
            if isinstance(stub, bool):
                assert str(stub).lower() == default, (command, option)
            elif isinstance(stub, (int, float)):
                assert stub == type(stub)(default), (command, option, stub, default)
            else:
                assert stub == default, (command, option, stub, default)
