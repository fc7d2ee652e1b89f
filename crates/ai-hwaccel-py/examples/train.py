"""Does a QLoRA fine-tune of Llama 3.1 8B fit one 24 GB GPU?"""

from typing import Any, Dict

import ai_hwaccel


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def main() -> None:
    plan: Dict[str, Any] = ai_hwaccel.train(
        "llama-3.1-8b", devices="1xrtx-4090", method="qlora", lora_rank=16, seq=2048
    )
    print("fits:", plan["fits"])
    for device in plan["per_device"][:1]:
        print("per device:", {k: gib(v) for k, v in device.items() if k.endswith("_bytes") and isinstance(v, int)})


if __name__ == "__main__":
    main()
