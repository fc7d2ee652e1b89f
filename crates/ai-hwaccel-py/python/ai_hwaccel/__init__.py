"""ai_hwaccel: what accelerators does this machine really have, and how
should a model run on them.

Python bindings of the ai-hwaccel Rust library. Every function takes the
options of the matching ``ai-hwaccel`` CLI command as keyword arguments
(``--kv-dtype fp8`` is ``kv_dtype="fp8"``, ``--from DIR`` is ``from_=DIR``),
with the CLI's defaults, and returns what the CLI prints with ``--json``:
:func:`detect` as a :class:`Registry` of :class:`Device` objects, the others
as plain dicts and lists. Sizes are ints in bytes; an unknown value is
``None``; enums are strings.

Errors raise :class:`Error` (a runtime failure: the CLI's exit 1) or its
subclasses :class:`InvalidArgumentError` (also a ``ValueError``: the CLI's
exit 2) and :class:`NotFoundError` (also a ``FileNotFoundError``).
Detection and planning release the GIL. Importing the package loads no
vendor library (NVML is opened, at run time, only by :func:`detect` on the
live machine).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional

from . import _native

__version__: str = _native.__version__

__all__ = [
    "Device",
    "DetectionWarning",
    "Error",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "Registry",
    "detect",
    "emit",
    "fit",
    "model",
    "models",
    "plan",
    "specs",
    "topology",
    "train",
]


class Error(Exception):
    """A call failed (the CLI's exit 1): a model that cannot be loaded,
    options that do not fit the model or the devices, a malformed file.
    Base class of this package's other errors."""


class InvalidArgumentError(Error, ValueError):
    """An invalid option (the CLI's exit 2): an unknown keyword, a value of
    the wrong type or out of its documented bounds, an unknown device,
    backend, quantization or runtime name."""


class NotFoundError(Error, FileNotFoundError):
    """A file or directory an option names does not exist."""


class InternalError(Error):
    """A bug in the library (please report it)."""


_KINDS = {1: Error, 2: InvalidArgumentError, 3: NotFoundError}


def _arg(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_arg(v) for v in value]
    return value


def _call(command: str, options: Dict[str, Any]) -> Any:
    request: Dict[str, Any] = {}
    for key, value in options.items():
        # `from` is a Python keyword: `from_=DIR` is `--from DIR`.
        request["from" if key == "from_" else key] = _arg(value)
    try:
        text = json.dumps(request)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{command}: options are not JSON values: {e}") from None
    try:
        return _native.call(command, text)
    except _native.NativeError as e:
        kind, message = e.args
        raise _KINDS.get(kind, InternalError)(message) from None


def _json(command: str, options: Dict[str, Any]) -> Any:
    return json.loads(_call(command, options))


class DetectionWarning(NamedTuple):
    """Something detection could not read or did not believe."""

    backend: str
    message: str


class Device:
    """One detected device. Attributes mirror the fields of ``detect --json``
    (sizes in bytes, ``None`` when unknown, enums as strings); nested facts
    (``pci``, ``links``, ``spec``, ...) are dicts and lists."""

    __slots__ = ("_data",)

    def __init__(self, data: Dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        try:
            return data[name]
        except KeyError:
            raise AttributeError(f"Device has no attribute {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Device is read-only")

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and self._data == other._data

    def __hash__(self) -> int:
        return hash(self._data["id"])

    def __repr__(self) -> str:
        d = self._data
        return (
            f"Device(id={d['id']!r}, name={d['name']!r}, family={d['family']!r}, "
            f"memory_bytes={d['memory_bytes']!r})"
        )

    def to_dict(self) -> Dict[str, Any]:
        """The device as ``detect --json`` writes it (a deep copy)."""
        result: Dict[str, Any] = json.loads(json.dumps(self._data))
        return result

    as_dict = to_dict

    @property
    def is_accelerator(self) -> bool:
        """Every family but the CPU."""
        return bool(self._data["family"] != "cpu")


class Registry:
    """What :func:`detect` found: devices, system facts, warnings."""

    def __init__(self, text: str) -> None:
        data = json.loads(text)
        self._text = text
        self._data: Dict[str, Any] = data
        self.devices: List[Device] = [Device(d) for d in data["devices"]]
        self.system: Dict[str, Any] = data["system"]
        self.warnings: List[DetectionWarning] = [
            DetectionWarning(w["backend"], w["message"]) for w in data["warnings"]
        ]
        self.summary: Dict[str, Any] = data.get("summary", {})
        self.schema_version: int = data["schema_version"]
        accelerators, best = _native.accelerator_ids(text)
        by_id = {d.id: d for d in self.devices}
        self._accelerators = [by_id[i] for i in accelerators]
        self._best = by_id[best] if best is not None else None

    @classmethod
    def from_json(cls, text: str) -> "Registry":
        """Read a registry saved by ``ai-hwaccel detect --json`` (or
        :meth:`to_json`); a malformed one raises :class:`InvalidArgumentError`."""
        try:
            json.loads(text)
            return cls(text)
        except _native.NativeError as e:
            raise InvalidArgumentError(e.args[1]) from None
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidArgumentError(f"registry: {e!r}") from None

    def accelerators(self) -> List[Device]:
        """The available accelerators (never the CPU), in detection order."""
        return list(self._accelerators)

    def best_accelerator(self) -> Optional[Device]:
        """The available accelerator with its own memory and the most of it
        (``None`` without one; never the CPU), as the library ranks them."""
        return self._best

    def device(self, id: str) -> Optional[Device]:
        """The device with this id."""
        return next((d for d in self.devices if d.id == id), None)

    def __iter__(self) -> Iterator[Device]:
        return iter(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    def __repr__(self) -> str:
        return f"Registry({len(self.devices)} devices, {len(self.warnings)} warnings)"

    def to_dict(self) -> Dict[str, Any]:
        """The registry as ``detect --json`` writes it (a fresh copy)."""
        result: Dict[str, Any] = json.loads(self._text)
        return result

    as_dict = to_dict

    def to_json(self) -> str:
        """The registry's JSON, exactly as ``detect --json`` prints it."""
        return self._text

    def to_dataframe(self) -> Any:
        """The devices as a pandas DataFrame, one row per device and one
        column per scalar field (nested facts stay dicts/lists). Needs pandas."""
        try:
            import pandas  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise ImportError(
                "Registry.to_dataframe needs pandas: pip install pandas"
            ) from None
        return pandas.DataFrame([d.to_dict() for d in self.devices])


def detect(**options: Any) -> Registry:
    """Detect devices (``ai-hwaccel detect --json``). Options: ``root``,
    ``no_exec``, ``timeout`` (5.0 s), ``tool_path``, ``backends``, ``full``,
    ``from_`` (a snapshot directory), ``cached``, ``family``."""
    return Registry(_call("detect", options))


def topology(**options: Any) -> Dict[str, Any]:
    """The interconnect report (``ai-hwaccel topo --json``). Options: those of
    :func:`detect` but ``cached`` and ``family``, plus ``registry`` (a saved
    ``detect --json`` file) and ``cache_dir``."""
    result: Dict[str, Any] = _json("topology", options)
    return result


def specs(query: Optional[str] = None, *, cpu: bool = False) -> List[Dict[str, Any]]:
    """Datasheet entries (``ai-hwaccel specs [QUERY] --json``); with
    ``cpu=True`` the CPU table (``ai-hwaccel specs --cpu [QUERY] --json``)."""
    result: List[Dict[str, Any]] = _json("specs", {"query": query, "cpu": cpu})
    return result


def model(model: str) -> Dict[str, Any]:
    """A model's architecture (``ai-hwaccel model MODEL --json``): a catalog
    name, a path (config.json, model directory, .safetensors, .gguf) or a
    size like ``"7b"``."""
    result: Dict[str, Any] = _json("model", {"model": model})
    return result


def models() -> List[Dict[str, Any]]:
    """The model catalog (``ai-hwaccel model --list --json``)."""
    result: List[Dict[str, Any]] = _json("models", {})
    return result


def plan(model: str, **options: Any) -> Dict[str, Any]:
    """Plan inference (``ai-hwaccel plan MODEL --json``); with ``emit=R``
    the launch command object of ``--emit R --json``."""
    result: Dict[str, Any] = _json("plan", dict(options, model=model))
    return result


def emit(model: str, runtime: str, **options: Any) -> Dict[str, Any]:
    """The launch command of a plan for a runtime (``ai-hwaccel plan MODEL
    --emit RUNTIME --json``): ``{runtime, version, argv, env, files, notes}``."""
    return plan(model, emit=runtime, **options)


def fit(**options: Any) -> Dict[str, Any]:
    """Which catalog models fit the devices (``ai-hwaccel fit --json``)."""
    result: Dict[str, Any] = _json("fit", options)
    return result


def train(model: str, **options: Any) -> Dict[str, Any]:
    """Plan training (``ai-hwaccel train MODEL --json``)."""
    result: Dict[str, Any] = _json("train", dict(options, model=model))
    return result
