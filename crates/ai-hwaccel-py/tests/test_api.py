"""The Python objects: types, queries, errors, threads, the GIL, pandas."""

import json
import os
import stat
import subprocess
import sys
import threading
import time

import pytest

import ai_hwaccel
from conftest import root, without_timings


def test_device_attributes_are_python_types():
    r = ai_hwaccel.detect(root=root("two-socket-pci"), no_exec=True)
    cpu = r.device("cpu")
    assert cpu is not None and not cpu.is_accelerator
    assert isinstance(cpu.memory_bytes, int) and cpu.memory_bytes == r.to_dict()["devices"][0]["memory_bytes"]
    gpu = r.devices[1]
    assert gpu.family == "gpu" and isinstance(gpu.family, str)
    assert gpu.memory_bytes is None  # unknown stays None, never 0
    assert isinstance(gpu.pci_address, str) and gpu.pci_address == gpu.id.split(":", 1)[1]
    assert gpu.to_dict() == r.to_dict()["devices"][1]
    assert gpu.as_dict() == gpu.to_dict()
    with pytest.raises(AttributeError):
        gpu.memory_bytes = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        gpu.no_such_field
    assert "memory_bytes" in dir(gpu)
    assert all(isinstance(w, ai_hwaccel.DetectionWarning) for w in r.warnings)


def test_registry_queries_follow_the_library():
    r = ai_hwaccel.detect(root=root("mi300x-spx-8gpu"), no_exec=True)
    acc = r.accelerators()
    assert len(acc) == 8 and all(d.available and d.family != "cpu" for d in acc)
    best = r.best_accelerator()
    assert best is not None and best in acc
    # No memory figure on any: the library breaks the tie by the lowest id.
    assert best.id == min(d.id for d in acc)
    assert len(r) == len(r.devices) and list(r) == r.devices
    cpu_only = ai_hwaccel.detect(root=root("container-cgroup-v2"), no_exec=True)
    assert cpu_only.best_accelerator() is None and cpu_only.accelerators() == []


def test_registry_round_trips_through_json(tmp_path):
    r = ai_hwaccel.detect(root=root("two-socket-pci"), no_exec=True)
    again = ai_hwaccel.Registry.from_json(r.to_json())
    assert again.to_dict() == r.to_dict()
    assert [d.id for d in again.accelerators()] == [d.id for d in r.accelerators()]
    with pytest.raises(ValueError):
        ai_hwaccel.Registry.from_json('{"schema_version": 99, "devices": []}')
    with pytest.raises(ValueError):
        ai_hwaccel.Registry.from_json("not json")


def test_to_dataframe():
    r = ai_hwaccel.detect(root=root("mi300x-spx-8gpu"), no_exec=True)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            r.to_dataframe()
        pytest.skip("skipped: pandas is not installed (the ImportError was checked)")
    df = r.to_dataframe()
    assert list(df["id"]) == [d.id for d in r.devices]
    assert "memory_bytes" in df.columns and len(df) == 9


def test_paths_and_lists_are_accepted(tmp_path):
    import pathlib

    r1 = ai_hwaccel.detect(root=pathlib.Path(root("two-socket-pci")), no_exec=True, family=("gpu", "cpu"))
    r2 = ai_hwaccel.detect(root=root("two-socket-pci"), no_exec=True, family="gpu,cpu")
    assert [d.id for d in r1] == [d.id for d in r2]
    with pytest.raises(ValueError):
        ai_hwaccel.detect(root=object())
    a, b = tmp_path / "a", tmp_path / "b,c"
    a.mkdir()
    b.mkdir()
    as_list = ai_hwaccel.detect(root=root("two-socket-pci"), tool_path=[a, b], backends="nvidia")
    as_string = ai_hwaccel.detect(root=root("two-socket-pci"), tool_path=f"{a}:{b}", backends="nvidia")
    assert without_timings(as_list.to_dict()) == without_timings(as_string.to_dict())
    with pytest.raises(ValueError, match="tool_path"):
        ai_hwaccel.detect(tool_path=[1])


def test_threads_get_their_own_answers_and_errors():
    results = {}

    def work(i):
        try:
            if i % 2:
                results[i] = ai_hwaccel.plan("llama-3.1-8b", devices=f"{i}xl4")["devices"]
            else:
                ai_hwaccel.plan("7b", devices="1xl4", batch=-i)
        except ai_hwaccel.InvalidArgumentError as e:
            results[i] = str(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(1, 9):
        if i % 2:
            assert len(results[i]) == i
        else:
            assert f"got {-i}" in results[i]


def test_detection_releases_the_gil(tmp_path):
    # A fake tool that sleeps; while detection waits for it, a Python
    # thread must keep running (it could not if the GIL were held).
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\nsleep 1\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.005)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.05)
    before = len(ticks)
    r = ai_hwaccel.detect(root=root("two-socket-pci"), tool_path=str(tmp_path), backends="nvidia", timeout=3)
    during = len(ticks) - before
    stop.set()
    t.join()
    assert r is not None
    assert during >= 20, f"the ticker ran {during} times during detection: the GIL was held"


def test_import_loads_no_vendor_library():
    code = (
        "import ai_hwaccel, sys\n"
        "maps = open('/proc/self/maps').read()\n"
        "sys.exit(1 if 'libnvidia-ml' in maps or 'libamd_smi' in maps else 0)\n"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_version():
    assert ai_hwaccel.__version__ == "0.1.0"
