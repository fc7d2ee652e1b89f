# Stub of the PyO3 extension (crates/ai-hwaccel-py/src/lib.rs).
from typing import List, Optional, Tuple

__version__: str

class NativeError(Exception):
    """args: (kind, message); kind 1 failed, 2 invalid argument, 3 not found."""

def call(command: str, request: str) -> str: ...
def commands() -> List[Tuple[str, List[str]]]: ...
def accelerator_ids(registry_json: str) -> Tuple[List[str], Optional[str]]: ...
