#!/usr/bin/env python3
"""Write a small llama-architecture GGUF model with random weights, for the
end-to-end llama.cpp test (crates/ai-hwaccel-cli/tests/llamacpp.rs).

usage: make-test-gguf.py OUT.gguf {F16|Q8_0} [--layers N] [--embd N] [--vocab N]
                         [--experts N --experts-used K]
                         [--arch qwen35|qwen35moe|qwen3next|gemma2] [--window N]

With --experts, every layer's feed-forward is a mixture of N experts with a
router (Mixtral's layout in llama.cpp's llama architecture: ffn_gate_inp,
ffn_{gate,up,down}_exps stacked over the experts), K of them used per token.

With --arch qwen35, the model is a Qwen3.5 hybrid as llama.cpp's qwen35
architecture loads it (src/models/qwen35.cpp, `load_arch_tensors`): every
--full-attn-interval-th layer is gated full attention (attn_q holds the
query and its output gate, Q and K normalized per head), the others are
gated DeltaNet linear attention (attn_qkv, attn_gate, ssm_conv1d, ssm_a,
ssm_dt, ssm_beta, ssm_alpha, ssm_norm, ssm_out) with --linear-heads-k key
heads and --linear-heads-v value heads of --linear-head-dim each and a
causal convolution of --conv-kernel taps; each layer's feed-forward input
is normalized by post_attention_norm. Its small tensors (the convolution,
A, dt, norms) stay F32 as llama.cpp's converter keeps them. --arch
qwen35moe is the same hybrid with Qwen3.5-MoE's feed-forward
(src/models/qwen35moe.cpp): --experts routed experts of --ff each, K used
per token, beside a shared expert of --shared-ff gated by its own
one-output router (ffn_gate_inp_shexp). --arch qwen3next is Qwen3-Next's
layout of the same (src/models/qwen3next.cpp): the linear layers' beta and
alpha projections in one matrix (ssm_ba), no rope sections.

With --arch gemma2, the model is a Gemma 2 as llama.cpp's gemma2
architecture loads it (src/models/gemma2.cpp, `load_arch_tensors`):
interleaved sliding-window attention (iSWA), layers 0, 2, 4, … attending
to the last --window tokens and the others to the whole context
(`load_swa_pattern(ml, 2)`, the file recording `attention.sliding_window`
but no pattern), so llama.cpp keeps two KV caches (`llama_kv_cache_iswa`:
the non-SWA one of the full context, the SWA one of about the window).
Each layer's attention and feed-forward outputs are normalized again
(post_attention_norm, post_ffw_norm); attention and final logits are
soft-capped (attn_logit_softcapping 50, final_logit_softcapping 30, as
Gemma 2 ships); there is no output.weight, the output head is the
embedding matrix (llama.cpp loads token_embd twice, TENSOR_DUPLICATED).

Needs the `gguf` and `numpy` packages from PyPI. The tokenizer is a plain
SentencePiece-style ("llama") vocabulary of byte tokens and filler pieces;
the weights are seeded random numbers: the model produces tokens, not text.
Tensor names and metadata keys follow llama.cpp's llama architecture
(gguf-py's MODEL_TENSORS[LLAMA]); norms stay F32 as llama.cpp's converter
keeps them.
"""
import argparse

import numpy as np
import gguf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("dtype", choices=["F16", "Q8_0"])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--embd", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ff", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--experts", type=int, default=0)
    ap.add_argument("--experts-used", type=int, default=2)
    ap.add_argument(
        "--arch", choices=["llama", "qwen35", "qwen35moe", "qwen3next", "gemma2"], default="llama"
    )
    ap.add_argument("--window", type=int, default=256)
    ap.add_argument("--shared-ff", type=int, default=512)
    ap.add_argument("--full-attn-interval", type=int, default=4)
    ap.add_argument("--linear-heads-k", type=int, default=2)
    ap.add_argument("--linear-heads-v", type=int, default=4)
    ap.add_argument("--linear-head-dim", type=int, default=32)
    ap.add_argument("--conv-kernel", type=int, default=4)
    a = ap.parse_args()
    if a.arch in ("qwen35", "gemma2") and a.experts:
        ap.error("--experts is for --arch llama, qwen35moe or qwen3next")
    if a.arch in ("qwen35moe", "qwen3next") and not a.experts:
        ap.error(f"--arch {a.arch} needs --experts")
    hybrid = a.arch in ("qwen35", "qwen35moe", "qwen3next")
    moe_ffn = a.arch in ("qwen35moe", "qwen3next")
    gemma = a.arch == "gemma2"

    rng = np.random.default_rng(42)
    w = gguf.GGUFWriter(a.out, a.arch)
    w.add_name(f"ai-hwaccel test {a.arch}")
    w.add_context_length(a.ctx)
    w.add_embedding_length(a.embd)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(a.embd // a.heads)
    if hybrid:
        # Interleaved multimodal RoPE (IMROPE): its sections cover half the
        # rotary dimensions, as Qwen3.5's [11, 11, 10, 0] do of 64.
        half = a.embd // a.heads // 2
        if a.arch != "qwen3next":
            w.add_rope_dimension_sections([half - 2 * (half // 3), half // 3, half // 3, 0])
        w.add_full_attention_interval(a.full_attn_interval)
        w.add_ssm_conv_kernel(a.conv_kernel)
        w.add_ssm_state_size(a.linear_head_dim)
        w.add_ssm_group_count(a.linear_heads_k)
        w.add_ssm_time_step_rank(a.linear_heads_v)
        w.add_ssm_inner_size(a.linear_head_dim * a.linear_heads_v)
    if gemma:
        w.add_sliding_window(a.window)
        w.add_attn_logit_softcapping(50.0)
        w.add_final_logit_softcapping(30.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(a.vocab)
    if a.experts:
        w.add_expert_count(a.experts)
        w.add_expert_used_count(a.experts_used)
    if moe_ffn:
        w.add_expert_feed_forward_length(a.ff)
        w.add_expert_shared_feed_forward_length(a.shared_ff)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if a.dtype == "F16" else gguf.LlamaFileType.MOSTLY_Q8_0)

    # Tokenizer: <unk>, <s>, </s>, 256 byte tokens, then filler pieces.
    tokens, scores, types = [b"<unk>", b"<s>", b"</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>".encode())
        scores.append(0.0)
        types.append(6)  # BYTE
    i = 0
    while len(tokens) < a.vocab:
        tokens.append(f"\u2581t{i}".encode())
        scores.append(-float(i))
        types.append(1)  # NORMAL
        i += 1
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    qtype = gguf.GGMLQuantizationType.F16 if a.dtype == "F16" else gguf.GGMLQuantizationType.Q8_0

    def mat(name, rows, cols, stack=None):
        shape = (rows, cols) if stack is None else (stack, rows, cols)
        x = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        if qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, x.astype(np.float16))
        else:
            q = gguf.quants.quantize(x, qtype)
            w.add_tensor(name, q, raw_dtype=qtype)

    def norm(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    def f32(name, shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    head = a.embd // a.heads
    mat("token_embd.weight", a.vocab, a.embd)
    if hybrid:
        # ggml's dimensions are numpy's reversed: mat(name, rows, cols) is
        # llama.cpp's {cols, rows}.
        key_dim = a.linear_head_dim * a.linear_heads_k
        value_dim = a.linear_head_dim * a.linear_heads_v
        for l in range(a.layers):
            norm(f"blk.{l}.attn_norm.weight", a.embd)
            norm(f"blk.{l}.post_attention_norm.weight", a.embd)
            if (l + 1) % a.full_attn_interval == 0:
                mat(f"blk.{l}.attn_q.weight", 2 * a.heads * head, a.embd)
                mat(f"blk.{l}.attn_k.weight", a.kv_heads * head, a.embd)
                mat(f"blk.{l}.attn_v.weight", a.kv_heads * head, a.embd)
                mat(f"blk.{l}.attn_output.weight", a.embd, a.heads * head)
                norm(f"blk.{l}.attn_q_norm.weight", head)
                norm(f"blk.{l}.attn_k_norm.weight", head)
            else:
                mat(f"blk.{l}.attn_qkv.weight", 2 * key_dim + value_dim, a.embd)
                mat(f"blk.{l}.attn_gate.weight", value_dim, a.embd)
                f32(f"blk.{l}.ssm_conv1d.weight", (2 * key_dim + value_dim, a.conv_kernel))
                f32(f"blk.{l}.ssm_dt.bias", (a.linear_heads_v,))
                # A = -exp(A_log): negative, as the converter writes it.
                w.add_tensor(f"blk.{l}.ssm_a", -np.ones(a.linear_heads_v, dtype=np.float32))
                if a.arch == "qwen3next":
                    mat(f"blk.{l}.ssm_ba.weight", 2 * a.linear_heads_v, a.embd)
                else:
                    mat(f"blk.{l}.ssm_beta.weight", a.linear_heads_v, a.embd)
                    mat(f"blk.{l}.ssm_alpha.weight", a.linear_heads_v, a.embd)
                norm(f"blk.{l}.ssm_norm.weight", a.linear_head_dim)
                mat(f"blk.{l}.ssm_out.weight", a.embd, value_dim)
            if moe_ffn:
                # Routers stay F32, as llama.cpp's converter and quantizer keep them.
                f32(f"blk.{l}.ffn_gate_inp.weight", (a.experts, a.embd))
                mat(f"blk.{l}.ffn_gate_exps.weight", a.ff, a.embd, a.experts)
                mat(f"blk.{l}.ffn_up_exps.weight", a.ff, a.embd, a.experts)
                mat(f"blk.{l}.ffn_down_exps.weight", a.embd, a.ff, a.experts)
                f32(f"blk.{l}.ffn_gate_inp_shexp.weight", (a.embd,))
                mat(f"blk.{l}.ffn_gate_shexp.weight", a.shared_ff, a.embd)
                mat(f"blk.{l}.ffn_up_shexp.weight", a.shared_ff, a.embd)
                mat(f"blk.{l}.ffn_down_shexp.weight", a.embd, a.shared_ff)
            else:
                mat(f"blk.{l}.ffn_gate.weight", a.ff, a.embd)
                mat(f"blk.{l}.ffn_up.weight", a.ff, a.embd)
                mat(f"blk.{l}.ffn_down.weight", a.embd, a.ff)
    for l in range(0 if hybrid else a.layers):
        norm(f"blk.{l}.attn_norm.weight", a.embd)
        mat(f"blk.{l}.attn_q.weight", a.embd, a.embd)
        mat(f"blk.{l}.attn_k.weight", a.kv_heads * head, a.embd)
        mat(f"blk.{l}.attn_v.weight", a.kv_heads * head, a.embd)
        mat(f"blk.{l}.attn_output.weight", a.embd, a.embd)
        if gemma:
            norm(f"blk.{l}.post_attention_norm.weight", a.embd)
            norm(f"blk.{l}.post_ffw_norm.weight", a.embd)
        norm(f"blk.{l}.ffn_norm.weight", a.embd)
        if a.experts:
            # The router stays F32, as llama.cpp's converter and quantizer keep it.
            w.add_tensor(
                f"blk.{l}.ffn_gate_inp.weight",
                (rng.standard_normal((a.experts, a.embd)) * 0.02).astype(np.float32),
            )
            mat(f"blk.{l}.ffn_gate_exps.weight", a.ff, a.embd, a.experts)
            mat(f"blk.{l}.ffn_up_exps.weight", a.ff, a.embd, a.experts)
            mat(f"blk.{l}.ffn_down_exps.weight", a.embd, a.ff, a.experts)
        else:
            mat(f"blk.{l}.ffn_gate.weight", a.ff, a.embd)
            mat(f"blk.{l}.ffn_up.weight", a.ff, a.embd)
            mat(f"blk.{l}.ffn_down.weight", a.embd, a.ff)
    norm("output_norm.weight", a.embd)
    if not gemma:
        mat("output.weight", a.vocab, a.embd)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
