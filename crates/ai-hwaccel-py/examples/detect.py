"""What accelerators does this machine have? (python examples/detect.py [ROOT])"""

import sys
from typing import Optional

import ai_hwaccel


def main(root: Optional[str]) -> None:
    registry = ai_hwaccel.detect(root=root, no_exec=root is not None)
    for device in registry.accelerators():
        memory = "unknown" if device.memory_bytes is None else f"{device.memory_bytes / 2**30:.0f} GiB"
        print(f"{device.id}  {device.name}  {memory}")
    best = registry.best_accelerator()
    print("best:", best.name if best is not None else "no accelerator")
    for warning in registry.warnings:
        print(f"warning: [{warning.backend}] {warning.message}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
