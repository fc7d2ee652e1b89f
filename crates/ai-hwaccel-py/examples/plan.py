"""Plan Llama 3.1 70B on four H100s, and the vLLM command of the best plan."""

import ai_hwaccel


def main() -> None:
    try:
        plan = ai_hwaccel.plan("llama-3.1-70b", devices="4xh100-sxm", context=8192, max_plans=3)
    except ai_hwaccel.InvalidArgumentError as e:
        raise SystemExit(f"bad option: {e}")
    print(f"{plan['model']} at {plan['quantization']}, feasible: {plan['feasible']}")
    for p in plan["plans"]:
        rate = p["decode_tokens_per_s"]
        print(f"  TP {p['tensor_parallel']} PP {p['pipeline_parallel']} DP {p['data_parallel']}: "
              f"{'unknown' if rate is None else f'{rate:.0f}'} tokens/s")
    launch = ai_hwaccel.emit("llama-3.1-70b", "vllm", devices="4xh100-sxm", context=8192)
    print(" ".join(launch["argv"]))


if __name__ == "__main__":
    main()
