"""Shared fixtures: the CLI to compare with, the fake roots."""

import json
import os
import pathlib
import subprocess
from typing import Any, List, Tuple

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
ROOTS_DIR = REPO / "crates" / "ai-hwaccel" / "tests" / "fixtures" / "roots"
ROOTS = sorted(p.name for p in ROOTS_DIR.iterdir() if p.is_dir())


def cli_path() -> pathlib.Path:
    env = os.environ.get("AI_HWACCEL_CLI")
    if env:
        return pathlib.Path(env)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "ai-hwaccel"


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    path = cli_path()
    if not path.exists():
        pytest.skip(f"skipped: no CLI at {path} (cargo build -p ai-hwaccel-cli, or set AI_HWACCEL_CLI)")
    return path


def run_cli(cli: pathlib.Path, *args: str) -> Tuple[int, str, str]:
    p = subprocess.run([str(cli), *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def cli_json(cli: pathlib.Path, *args: str) -> Any:
    code, out, err = run_cli(cli, *args)
    assert code == 0, f"ai-hwaccel {' '.join(args)} exited {code}: {err}"
    return json.loads(out)


def without_timings(registry: Any) -> Any:
    """A registry's JSON less what differs between two runs (how long it took)."""
    r = dict(registry)
    for k in ("timings", "total_millis"):
        r.pop(k, None)
    return r


def root(name: str) -> str:
    return str(ROOTS_DIR / name)


__all__: List[str] = ["REPO", "ROOTS", "cli_json", "run_cli", "root", "without_timings"]
