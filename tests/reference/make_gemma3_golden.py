#!/usr/bin/env python3
"""Writes the Gemma 3 architecture golden data: tests/golden/gemma3_tiny.{gguf,txt}.

The oracle is transformers' Gemma3ForCausalLM (text only; torch, CPU, float32,
eager attention), small and random (seeded), shaped like Gemma 3 270M where it
matters: one KV head (multi-query), a head size (32) that is not width / heads
(64 / 4 = 16), GeGLU with the tanh GELU, per-head RMSNorm of q and k, norms
after attention and after the FFN, embeddings scaled by sqrt(d), the output
head tied to the embedding, six layers of which the sixth is global and the
rest slide over a window of 12 tokens, RoPE base 1e6 on the global layer and
1e4 on the sliding ones, attention scale 1/sqrt(head size) (query_pre_attn_scalar
= head size, as in the 270M model). The tokenizer is the 321-token test
vocabulary of make_sliding_window_golden.py (the architecture does not depend
on it).

Export follows llama.cpp's converter for gemma3: general.architecture "gemma3",
keys under "gemma3.", q and k rows NOT permuted (Gemma's RoPE rotates halves),
every RMSNorm weight stored as 1 + w (transformers' Gemma norm multiplies by
1 + w; its GGUF loader subtracts 1 again), no output.weight (tied), window in
gemma3.attention.sliding_window and no pattern key (the family's pattern of 6).
The script reloads the file with transformers' own GGUF loader and checks that
it gives the same logits, so the export is checked by transformers too.

The prompt (48 random ids) runs past the window; the golden file holds the
logits of every position p >= W. The script asserts that two wrong models
differ clearly there: the same weights with every layer global (no window), and
with the global RoPE base on every layer; so a runtime that ignores the window
or the per-layer base fails the test.

Run:  python3 tests/reference/make_gemma3_golden.py
"""

import datetime
import importlib.metadata
import os
import sys
import tempfile

import gguf
import numpy as np
import torch
from transformers import AutoModelForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig

sys.path.insert(0, os.path.dirname(__file__))
import make_sliding_window_golden as sw  # noqa: E402  (the test vocabulary)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOLDEN_DIR = os.path.join(REPO, "tests", "golden")

WINDOW, PROMPT, CONTEXT = 12, 48, 64
LAYERS, WIDTH, HEADS, KV_HEADS, HEAD_DIM, FFN = 6, 64, 4, 1, 32, 128
GLOBAL_THETA, LOCAL_THETA, RMS_EPS = 1_000_000.0, 10_000.0, 1e-6
SEED = 4321


def make_model(vocab, layer_types, local_theta=LOCAL_THETA):
    config = Gemma3TextConfig(
        vocab_size=vocab, hidden_size=WIDTH, intermediate_size=FFN, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
        rms_norm_eps=RMS_EPS, max_position_embeddings=CONTEXT, sliding_window=WINDOW,
        layer_types=layer_types, query_pre_attn_scalar=HEAD_DIM,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": GLOBAL_THETA},
                         "sliding_attention": {"rope_type": "default", "rope_theta": local_theta}},
        tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh",
        attn_implementation="eager", pad_token_id=0, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(SEED)
    model = Gemma3ForCausalLM(config).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(0.2 * (2 * torch.rand_like(p) - 1))  # Gemma's norm multiplies by 1 + w
            elif "embed_tokens" in name:
                p.copy_(torch.randn_like(p) * 0.2)
            else:
                p.copy_(torch.randn_like(p) / np.sqrt(p.shape[1]) * 1.5)
    return model


def layer_types(sliding=True):
    return ["sliding_attention" if sliding and (i + 1) % 6 else "full_attention"
            for i in range(LAYERS)]


def export(model, vocab_tokens, path):
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(path, "gemma3")
    w.add_name("gemma3-tiny-test")
    w.add_block_count(LAYERS)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(WIDTH)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(GLOBAL_THETA)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_sliding_window(WINDOW)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(vocab_tokens)
    w.add_token_types([3] * len(sw.SPECIAL) + [1] * (len(vocab_tokens) - len(sw.SPECIAL)))
    w.add_token_merges(sw.MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(0)
    w.add_add_bos_token(False)
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
             "input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
             "pre_feedforward_layernorm": "ffn_norm",
             "post_feedforward_layernorm": "post_ffw_norm"}
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    for layer in range(LAYERS):
        for hf, ours in names.items():
            t = sd[f"model.layers.{layer}.{hf}.weight"]
            if "norm" in ours:
                t = t + np.float32(1.0)
            w.add_tensor(f"blk.{layer}.{ours}.weight", np.ascontiguousarray(t))
    w.add_tensor("output_norm.weight", sd["model.norm.weight"] + np.float32(1.0))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].double().numpy()


def check_with_transformers_loader(path, ids, logits):
    """transformers' own GGUF loader must read the export back to the same model."""
    d, name = os.path.split(path)
    # The file has no query_pre_attn_scalar (neither has a real Gemma 3 GGUF): llama.cpp, like
    # staticlm, scales by 1/sqrt(head size), transformers' loader by its default 256^-0.5, the
    # same for every Gemma 3 up to 12B (head size 256). Given here, for the 32-wide heads.
    loaded = AutoModelForCausalLM.from_pretrained(d, gguf_file=name, dtype=torch.float32,
                                                  attn_implementation="eager",
                                                  query_pre_attn_scalar=HEAD_DIM).eval()
    got = logits_of(loaded, ids)
    diff = np.abs(got - logits).max()
    assert diff < 1e-4, f"transformers reads the export back differently: {diff}"
    return diff


def main():
    vocab_tokens = sw.tokens()
    rng = np.random.default_rng(SEED)
    ids = rng.integers(len(sw.SPECIAL), len(vocab_tokens), size=PROMPT).tolist()
    model = make_model(len(vocab_tokens), layer_types())
    logits = logits_of(model, ids)
    all_global = logits_of(make_model(len(vocab_tokens), layer_types(sliding=False)), ids)
    one_base = logits_of(make_model(len(vocab_tokens), layer_types(), GLOBAL_THETA), ids)
    differ_global = np.abs(logits[WINDOW:] - all_global[WINDOW:]).max(axis=1)
    differ_base = np.abs(logits[1:] - one_base[1:]).max(axis=1)
    assert differ_global.min() > 0.05, differ_global.min()
    assert differ_base.max() > 0.05, differ_base.max()

    gguf_path = os.path.join(GOLDEN_DIR, "gemma3_tiny.gguf")
    text_path = os.path.join(GOLDEN_DIR, "gemma3_tiny.txt")
    export(model, vocab_tokens, gguf_path)
    reload_diff = check_with_transformers_loader(gguf_path, ids, logits)
    versions = {p: importlib.metadata.version(p) for p in ("transformers", "torch", "gguf")}
    with open(text_path, "w") as f:
        f.write("# Gemma 3 architecture golden: tests/reference/make_gemma3_golden.py\n")
        f.write(f"# oracle: transformers Gemma3ForCausalLM, float32, eager attention, "
                f"sliding_window={WINDOW}, layer types {layer_types()}\n")
        f.write("# " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "\n")
        f.write(f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat()}\n")
        f.write(f"# largest |logit|: {np.abs(logits).max():.3f}; transformers' GGUF loader "
                f"reads the export back within {reload_diff:.2g}\n")
        f.write(f"# smallest max difference at positions >= W from every layer global: "
                f"{differ_global.min():.3f}; largest from one RoPE base on every layer: "
                f"{differ_base.max():.3f}\n")
        f.write(f"window {WINDOW}\n")
        f.write("tokens " + " ".join(str(i) for i in ids) + "\n")
        for p in range(WINDOW, len(ids)):
            f.write(f"logits {p} " + " ".join(f"{v:.6g}" for v in logits[p]) + "\n")
    print(f"wrote {gguf_path} ({os.path.getsize(gguf_path)} bytes) and {text_path}")


if __name__ == "__main__":
    main()
