# Typed interface of ai_hwaccel (the implementation is __init__.py).
# Keyword arguments are the CLI's long options (`-` as `_`, `--from` as
# `from_`) with the CLI's defaults; tests/test_cli_parity.py checks both
# against `ai-hwaccel <command> --help` and the native option table.
import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Union

StrPath = Union[str, "os.PathLike[str]"]
Names = Union[str, Sequence[str]]
Json = Dict[str, Any]

__version__: str

class Error(Exception): ...
class InvalidArgumentError(Error, ValueError): ...
class NotFoundError(Error, FileNotFoundError): ...
class InternalError(Error): ...

class DetectionWarning(NamedTuple):
    backend: str
    message: str

class Device:
    id: str
    name: str
    vendor: str
    family: str
    available: bool
    unavailable_reason: Optional[str]
    memory_bytes: Optional[int]
    memory_free_bytes: Optional[int]
    pci_address: Optional[str]
    numa_node: Optional[int]
    local_cpus: Optional[List[int]]
    pci_path: Optional[Json]
    driver: Optional[str]
    driver_version: Optional[str]
    compute_capability: Optional[str]
    uuid: Optional[str]
    source: str
    pci: Optional[Json]
    index: Optional[int]
    serial: Optional[str]
    architecture: Optional[str]
    firmware_version: Optional[str]
    compute_units: Optional[int]
    power_limit_watts: Optional[float]
    temperature_celsius: Optional[float]
    ecc_enabled: Optional[bool]
    ecc_uncorrected_errors: Optional[int]
    parent: Optional[str]
    partition: Optional[str]
    links: List[Json]
    extra: Dict[str, str]
    spec: Optional[Json]
    shared_memory: Optional[Json]
    def __init__(self, data: Json) -> None: ...
    @property
    def is_accelerator(self) -> bool: ...
    def to_dict(self) -> Json: ...
    def as_dict(self) -> Json: ...

class Registry:
    devices: List[Device]
    system: Json
    warnings: List[DetectionWarning]
    summary: Json
    schema_version: int
    def __init__(self, text: str) -> None: ...
    @classmethod
    def from_json(cls, text: str) -> Registry: ...
    def accelerators(self) -> List[Device]: ...
    def best_accelerator(self) -> Optional[Device]: ...
    def device(self, id: str) -> Optional[Device]: ...
    def __iter__(self) -> Iterator[Device]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> Json: ...
    def as_dict(self) -> Json: ...
    def to_json(self) -> str: ...
    def to_dataframe(self) -> Any: ...

def detect(
    *,
    root: Optional[StrPath] = None,
    no_exec: bool = False,
    timeout: float = 5.0,
    tool_path: Optional[Union[str, Sequence[StrPath]]] = None,
    backends: Optional[Names] = None,
    full: bool = False,
    from_: Optional[StrPath] = None,
    cached: bool = False,
    family: Optional[Names] = None,
) -> Registry: ...
def topology(
    *,
    root: Optional[StrPath] = None,
    no_exec: bool = False,
    timeout: float = 5.0,
    tool_path: Optional[Union[str, Sequence[StrPath]]] = None,
    backends: Optional[Names] = None,
    full: bool = False,
    from_: Optional[StrPath] = None,
    registry: Optional[StrPath] = None,
    cache_dir: Optional[StrPath] = None,
) -> Json: ...
def specs(query: Optional[str] = None, *, cpu: bool = False) -> List[Json]: ...
def model(model: str) -> Json: ...
def models() -> List[Json]: ...
def plan(
    model: str,
    *,
    devices: Optional[str] = None,
    registry: Optional[StrPath] = None,
    quant: Optional[str] = None,
    kv_dtype: Optional[str] = None,
    context: Optional[int] = None,
    batch: int = 1,
    prefill_chunk: int = 2048,
    memory_utilization: float = 0.9,
    decode_efficiency: Optional[float] = None,
    prefill_efficiency: Optional[float] = None,
    kv_read_efficiency: Optional[float] = None,
    max_num_seqs: Optional[int] = None,
    max_num_batched_tokens: Optional[int] = None,
    mem_fraction_static: Optional[float] = None,
    max_plans: int = 5,
    objective: str = "latency",
    runtime: Optional[str] = None,
    input_len: Optional[int] = None,
    output_len: Optional[int] = None,
    ttft_ms: Optional[float] = None,
    tpot_ms: Optional[float] = None,
    expert_parallel: bool = False,
    unfused_attention: bool = False,
    runtime_build: Optional[str] = None,
    cuda_force_mmq: bool = False,
    imatrix: bool = False,
    mixed_prefill: bool = False,
    enforce_eager: bool = False,
    ubatch: Optional[int] = None,
    backend: Optional[str] = None,
    measure: bool = False,
    emit: Optional[str] = None,
    plan: int = 1,
    offload: bool = False,
    cloud: bool = False,
    provider: Optional[str] = None,
    price_file: Optional[StrPath] = None,
) -> Json: ...
def emit(
    model: str,
    runtime: str,
    *,
    devices: Optional[str] = None,
    registry: Optional[StrPath] = None,
    quant: Optional[str] = None,
    kv_dtype: Optional[str] = None,
    context: Optional[int] = None,
    batch: int = 1,
    prefill_chunk: int = 2048,
    memory_utilization: float = 0.9,
    decode_efficiency: Optional[float] = None,
    prefill_efficiency: Optional[float] = None,
    kv_read_efficiency: Optional[float] = None,
    max_num_seqs: Optional[int] = None,
    max_num_batched_tokens: Optional[int] = None,
    mem_fraction_static: Optional[float] = None,
    max_plans: int = 5,
    objective: str = "latency",
    input_len: Optional[int] = None,
    output_len: Optional[int] = None,
    ttft_ms: Optional[float] = None,
    tpot_ms: Optional[float] = None,
    expert_parallel: bool = False,
    unfused_attention: bool = False,
    runtime_build: Optional[str] = None,
    cuda_force_mmq: bool = False,
    imatrix: bool = False,
    mixed_prefill: bool = False,
    enforce_eager: bool = False,
    ubatch: Optional[int] = None,
    backend: Optional[str] = None,
    measure: bool = False,
    plan: int = 1,
    offload: bool = False,
) -> Json: ...
def fit(
    *,
    devices: Optional[str] = None,
    registry: Optional[StrPath] = None,
    runtime: Optional[str] = None,
    context: Optional[int] = None,
    use: Optional[Names] = None,
    min_params: Optional[Union[str, int]] = None,
    max_params: Optional[Union[str, int]] = None,
    offload: bool = False,
) -> Json: ...
def train(
    model: str,
    *,
    method: str = "full",
    optimizer: str = "adamw",
    precision: str = "mixed",
    zero: int = 0,
    dp: Optional[int] = None,
    tp: int = 1,
    pp: int = 1,
    sequence_parallel: bool = False,
    micro_batch: int = 1,
    seq: int = 2048,
    grad_accum: Optional[int] = None,
    expert_parallel: int = 1,
    recompute: str = "none",
    attention: str = "flash",
    offload: str = "none",
    lora_rank: int = 16,
    lora_targets: Names = "q,k,v,o,gate,up,down",
    lora_experts: bool = False,
    teacher: Optional[str] = None,
    mfu: float = 0.462,
    fragmentation: float = 0.0,
    framework_overhead: Optional[int] = None,
    devices: Optional[str] = None,
    emit: Optional[str] = None,
) -> Json: ...
