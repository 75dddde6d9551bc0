#!/usr/bin/env python3
"""Writes the sliding-window golden data: tests/golden/mistral_window.{gguf,txt}
(every layer windowed) and tests/golden/layered_window.{gguf,txt} (a per-layer
policy: layer 0 windowed, layer 1 global).

The oracle is transformers' MistralForCausalLM (torch, CPU, float32, eager
attention) with config.sliding_window = W: a token at position p attends to
positions p-W+1 ... p, itself included. The model is small and random (seeded),
with a vocabulary of 321 tokens (the test tokenizer of tests/support/
tiny_llama.cpp: SmolLM2's 17 special tokens, the 256 byte-level characters and
48 merges), so the GGUF stays under 1 MB.

Export. A Mistral model is written the way llama.cpp's converter writes one:
general.architecture "llama", f32 tensors under GGUF names, and the rows of Q
and K permuted so that RoPE's rotate-half pairs (i, i + d/2) become adjacent
pairs (2i, 2i + 1), the layout our runtime (and llama.cpp) rotate. The script
checks its own export: it undoes the permutation from the file's bytes and
compares with the torch weights. The window is written as
llama.attention.sliding_window (the key llama.cpp uses for the architectures
that carry it); the test passes --window explicitly.

The prompt (48 random ids) is longer than the model's context length (32), so
the test also shows positions going past the context with a window. The golden
file holds the logits of every position p >= W (the ones a window changes),
and the script asserts that the same model without a window gives clearly
different logits there, so a runtime ignoring the window fails the test.

Per-layer policy. transformers' Mistral has one window for every layer; its
Qwen2 takes config.layer_types ("sliding_attention" / "full_attention" per
layer). With its Q/K/V biases set to zero Qwen2 computes what a Llama does, so
the second model is a Qwen2ForCausalLM with zero biases and layer_types
[sliding, full], exported as a Llama GGUF with llama.attention.sliding_window
= 12 and llama.attention.sliding_window_pattern = 2 (layer i global when
(i + 1) % 2 == 0). Its context (64) holds the prompt, as a global layer needs.

Run:  python3 tests/reference/make_sliding_window_golden.py
"""

import datetime
import importlib.metadata
import os

import gguf
import numpy as np
import torch
from transformers import MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOLDEN_DIR = os.path.join(REPO, "tests", "golden")

WINDOW = 12
PROMPT = 48
CONTEXT = 32
LAYERS, WIDTH, HEADS, KV_HEADS, HEAD_DIM, FFN = 2, 64, 4, 2, 16, 128
ROPE_THETA, RMS_EPS = 10000.0, 1e-5
SEED = 1234
LAYERED_CONTEXT = 64
LAYER_TYPES = ["sliding_attention", "full_attention"]

SPECIAL = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>",
    "<file_sep>", "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>",
    "<issue_closed>", "<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
    "<jupyter_output>", "<jupyter_script>", "<empty_output>",
]
MERGES = [
    "Ġ t", "Ġ a", "i n", "h e", "Ġ Ġ", "r e", "o n", "e r", "Ġt he", "a t", "Ġ s", "Ġ o",
    "e n", "Ġ c", "e s", "Ġ w", "n d", "i t", "o r", "i s", "a l", "Ġ p", "in g", "Ġ f",
    "a n", "e d", "Ġ b", "o u", "a r", "Ġ in", "Ġo f", "Ġ m", "Ġa nd", "i on", "i c", "Ġ d",
    "Ġt o", "ĠĠ ĠĠ", "l e", "r o", "a s", "en t", "Ġ h", "Ġt h", "c t", "Ġ e", "Ġ re", "e l",
]
# SmolLM2's chat template (the runtime accepts ChatML templates only).
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}"
)


def byte_level_characters():
    printable = set(range(ord("!"), ord("~") + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    chars = [chr(b) for b in range(256) if b in printable]
    nxt = 0x100
    for b in range(256):
        if b not in printable:
            chars.append(chr(nxt))
            nxt += 1
    return chars


def tokens():
    return SPECIAL + byte_level_characters() + [m.replace(" ", "", 1) for m in MERGES]


def make_model(vocab, window, layer_types=None):
    common = dict(
        vocab_size=vocab, hidden_size=WIDTH, intermediate_size=FFN, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM,
        rms_norm_eps=RMS_EPS, rope_theta=ROPE_THETA, sliding_window=window,
        tie_word_embeddings=False, attn_implementation="eager")
    torch.manual_seed(SEED)
    if layer_types is None:
        model = MistralForCausalLM(MistralConfig(max_position_embeddings=CONTEXT, **common))
    else:
        model = Qwen2ForCausalLM(Qwen2Config(
            max_position_embeddings=LAYERED_CONTEXT, use_sliding_window=True,
            layer_types=layer_types, **common))
    model = model.float().eval()
    # Larger weights than the default init, so attention is far from uniform and the window
    # changes the logits clearly.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.zero_()  # Qwen2's Q/K/V biases: zero, so it computes what a Llama does
            elif name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * (2 * torch.rand_like(p) - 1))
            elif "embed_tokens" in name:
                p.copy_(torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / np.sqrt(p.shape[1]) * 1.5)
    return model


def permute(w, n_head):
    # llama.cpp's convert_hf_to_gguf permutation: rotate-half pairs → adjacent pairs.
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def export(model, vocab_tokens, path, context, pattern):
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("mistral-window-test")
    w.add_block_count(LAYERS)
    w.add_context_length(context)
    w.add_embedding_length(WIDTH)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_vocab_size(len(vocab_tokens))
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_uint32("llama.attention.sliding_window", WINDOW)
    if pattern:
        w.add_uint32("llama.attention.sliding_window_pattern", pattern)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(vocab_tokens)
    w.add_token_types([3] * len(SPECIAL) + [1] * (len(vocab_tokens) - len(SPECIAL)))
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    w.add_add_space_prefix(False)
    w.add_chat_template(CHAT_TEMPLATE)
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
             "post_attention_layernorm": "ffn_norm"}
    w.add_tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    for layer in range(LAYERS):
        for hf, ours in names.items():
            t = sd[f"model.layers.{layer}.{hf}.weight"]
            if ours == "attn_q":
                t = permute(t, HEADS)
            elif ours == "attn_k":
                t = permute(t, KV_HEADS)
            w.add_tensor(f"blk.{layer}.{ours}.weight", np.ascontiguousarray(t))
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    w.add_tensor("output.weight", sd["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sd


def check_export(path, sd):
    r = gguf.GGUFReader(path)
    t = {x.name: np.array(x.data) for x in r.tensors}
    for layer in range(LAYERS):
        q = unpermute(t[f"blk.{layer}.attn_q.weight"].reshape(HEADS * HEAD_DIM, WIDTH), HEADS)
        k = unpermute(t[f"blk.{layer}.attn_k.weight"].reshape(KV_HEADS * HEAD_DIM, WIDTH), KV_HEADS)
        assert np.array_equal(q, sd[f"model.layers.{layer}.self_attn.q_proj.weight"])
        assert np.array_equal(k, sd[f"model.layers.{layer}.self_attn.k_proj.weight"])


def write_golden(name, model, other, other_name, vocab_tokens, ids, context, pattern):
    """Logits of `model` at every position >= W; `other` must differ clearly there."""
    gguf_path = os.path.join(GOLDEN_DIR, name + ".gguf")
    text_path = os.path.join(GOLDEN_DIR, name + ".txt")
    with torch.no_grad():
        x = torch.tensor([ids])
        logits = model(x).logits[0].double().numpy()
        logits_other = other(x).logits[0].double().numpy()
    assert np.abs(logits[:WINDOW] - logits_other[:WINDOW]).max() < 1e-4
    differ = np.abs(logits[WINDOW:] - logits_other[WINDOW:]).max(axis=1)
    assert differ.min() > 0.05, differ.min()  # every position beyond W differs
    sd = export(model, vocab_tokens, gguf_path, context, pattern)
    check_export(gguf_path, sd)
    versions = {p: importlib.metadata.version(p) for p in ("transformers", "torch", "gguf")}
    with open(text_path, "w") as f:
        f.write("# Sliding-window golden: tests/reference/make_sliding_window_golden.py\n")
        f.write(f"# oracle: transformers {type(model).__name__}, float32, eager attention, "
                f"sliding_window={WINDOW}, layer types "
                f"{getattr(model.config, 'layer_types', None) or 'all sliding'}\n")
        f.write("# " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "\n")
        f.write(f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat()}\n")
        f.write(f"# largest |logit|: {np.abs(logits).max():.3f}; smallest max difference from "
                f"{other_name} at positions >= W: {differ.min():.3f}\n")
        f.write(f"window {WINDOW}\n")
        f.write("tokens " + " ".join(str(i) for i in ids) + "\n")
        for p in range(WINDOW, len(ids)):
            f.write(f"logits {p} " + " ".join(f"{v:.6g}" for v in logits[p]) + "\n")
    print(f"wrote {gguf_path} ({os.path.getsize(gguf_path)} bytes) and {text_path}; "
          f"differs from {other_name} by >= {differ.min():.3f}")


def main():
    vocab_tokens = tokens()
    assert len(vocab_tokens) == 321, len(vocab_tokens)
    rng = np.random.default_rng(SEED)
    ids = rng.integers(len(SPECIAL), len(vocab_tokens), size=PROMPT).tolist()
    write_golden("mistral_window", make_model(len(vocab_tokens), WINDOW),
                 make_model(len(vocab_tokens), None), "the model without a window",
                 vocab_tokens, ids, CONTEXT, 0)
    write_golden("layered_window", make_model(len(vocab_tokens), WINDOW, LAYER_TYPES),
                 make_model(len(vocab_tokens), WINDOW, ["sliding_attention"] * LAYERS),
                 "the same model windowed in every layer", vocab_tokens, ids, LAYERED_CONTEXT, 2)


if __name__ == "__main__":
    main()
