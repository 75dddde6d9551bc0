#!/usr/bin/env python3
"""Writes the golden logits of Gemma 3 with sinks on its global layers: tests/golden/gemma3_tiny_sinks.txt.

The model is the small random Gemma 3 of make_gemma3_golden.py (tests/golden/gemma3_tiny.gguf:
six layers, the sixth global, the others sliding over 12 tokens), read back by transformers'
own GGUF loader. With --sinks S --window W, staticlm keeps the sliding layers at the model's
window and bounds the global layer to StreamingLLM's cache: the S first positions (the sinks)
and the last W - S, scored at their positions inside that cache. Sinks at 0 .. S-1, the recent
keys after them, the query last (at W - 1 once the cache is full): the recent keys' distances
to the query are their true ones, and a sink j is scored at distance c - j, c the query's
position in the cache, instead of p - j.

The oracle is transformers' Gemma3ForCausalLM (float32) run over the whole prompt at once with
an attention function of this script's own (registered through transformers' AttentionInterface):
the sliding layers use transformers' mask unchanged; the global layer scores each query p over
the keys StreamingLLM keeps for it, with the query turned from p to c (RoPE with the global
layer's base, rotate-half layout, angles in double) for the sink scores only. A single pass
gives what a cache computes token by token, as each position's keys and its attended set depend
on its position alone. The prompt (72 random ids) runs past the model's context (64), which only
an unbounded cache allows.

The script asserts that three wrong runtimes differ clearly from this: the global layer keeping
the whole context (the hybrid cache without sinks), the sinks scored at their true distances
(no query turn), and the global layer sliding without sinks.

Run:  python3 tests/reference/make_gemma3_sinks_golden.py   (after make_gemma3_golden.py)
"""

import datetime
import importlib.metadata
import os

import numpy as np
import torch
from transformers import AttentionInterface, AutoModelForCausalLM
from transformers.masking_utils import AttentionMaskInterface, eager_mask

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOLDEN_DIR = os.path.join(REPO, "tests", "golden")

SINKS, GLOBAL_WINDOW, PROMPT, SEED = 3, 20, 72, 77
MODEL_WINDOW, HEAD_DIM = 12, 32  # as make_gemma3_golden.py

# What the global layer does: "sinks" (the mode), "whole" (no bound), "true_distance" (sinks
# scored without the turn), "window" (the last W positions, no sinks).
MODE = {"global": "sinks"}


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def turn(q, delta, theta):
    """q (heads, d) turned by `delta` positions with RoPE on halves (transformers' layout)."""
    i = np.arange(HEAD_DIM // 2, dtype=np.float64)
    inv_freq = theta ** (-2.0 * i / HEAD_DIM)
    angle = np.concatenate([delta * inv_freq] * 2)
    cos = torch.tensor(np.cos(angle), dtype=torch.float64)
    sin = torch.tensor(np.sin(angle), dtype=torch.float64)
    q = q.double()
    return (q * cos + rotate_half(q) * sin).float()


def global_scores(query, key, scaling, theta):
    """Scores (heads, p, j) of the global layer, -inf where the mode keeps no key."""
    heads, n = query.shape[0], query.shape[1]
    scores = torch.full((heads, n, n), float("-inf"))
    recent = GLOBAL_WINDOW - SINKS
    for p in range(n):
        full = torch.matmul(query[:, p, :], key.T) * scaling  # (heads, n)
        mode = MODE["global"]
        if mode == "whole" or p < GLOBAL_WINDOW:
            scores[:, p, : p + 1] = full[:, : p + 1]
            continue
        first_recent = p - recent + 1
        if mode == "window":
            scores[:, p, p - GLOBAL_WINDOW + 1 : p + 1] = full[:, p - GLOBAL_WINDOW + 1 : p + 1]
            continue
        scores[:, p, first_recent : p + 1] = full[:, first_recent : p + 1]
        q = query[:, p, :]
        if mode == "sinks":
            q = turn(q, (GLOBAL_WINDOW - 1) - p, theta)  # to its position in the cache
        scores[:, p, :SINKS] = torch.matmul(q, key[:SINKS].T) * scaling
    return scores


def attention(module, query, key, value, attention_mask, scaling=None, **kwargs):
    """transformers' eager attention, except that the global layer keeps what MODE says."""
    assert query.shape[0] == 1 and key.shape[1] == 1, "one sequence, one KV head"
    if module.is_sliding:
        weights = torch.matmul(query, key.transpose(2, 3)) * scaling + attention_mask
    else:
        theta = module.config.rope_parameters["full_attention"]["rope_theta"]
        weights = global_scores(query[0], key[0, 0], scaling, theta)[None]
    weights = torch.softmax(weights, dim=-1, dtype=torch.float32)
    out = torch.matmul(weights, value)  # value (1, 1, n, d) broadcast over the query heads
    return out.transpose(1, 2).contiguous(), weights


def logits_of(model, ids, mode):
    MODE["global"] = mode
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].double().numpy()


def main():
    AttentionInterface.register("streaming_sinks", attention)
    AttentionMaskInterface.register("streaming_sinks", eager_mask)  # eager attention's masks
    model = AutoModelForCausalLM.from_pretrained(
        GOLDEN_DIR, gguf_file="gemma3_tiny.gguf", dtype=torch.float32,
        attn_implementation="streaming_sinks", query_pre_attn_scalar=HEAD_DIM).eval()
    assert model.config.sliding_window == MODEL_WINDOW
    vocab = model.config.vocab_size
    rng = np.random.default_rng(SEED)
    ids = rng.integers(3, vocab, size=PROMPT).tolist()

    # The attention function is transformers' own where the mode changes nothing.
    eager = AutoModelForCausalLM.from_pretrained(
        GOLDEN_DIR, gguf_file="gemma3_tiny.gguf", dtype=torch.float32,
        attn_implementation="eager", query_pre_attn_scalar=HEAD_DIM).eval()
    with torch.no_grad():
        reference = eager(torch.tensor([ids])).logits[0].double().numpy()
    same = np.abs(logits_of(model, ids, "whole") - reference).max()
    assert same < 1e-5, same

    logits = logits_of(model, ids, "sinks")
    # Before the global layer's first eviction the mode is the plain hybrid cache, exactly.
    whole = logits_of(model, ids, "whole")
    assert np.abs(logits[:GLOBAL_WINDOW] - whole[:GLOBAL_WINDOW]).max() < 1e-5
    evicted = slice(GLOBAL_WINDOW + 4, PROMPT)  # a few evictions in
    differ = {m: np.abs(logits[evicted] - logits_of(model, ids, m)[evicted]).max(axis=1)
              for m in ("whole", "true_distance", "window")}
    for m, d in differ.items():
        assert d.max() > 0.05, (m, d.max())

    path = os.path.join(GOLDEN_DIR, "gemma3_tiny_sinks.txt")
    versions = {p: importlib.metadata.version(p) for p in ("transformers", "torch", "gguf")}
    with open(path, "w") as f:
        f.write("# Gemma 3 with sinks on its global layer: tests/reference/make_gemma3_sinks_golden.py\n")
        f.write(f"# oracle: transformers Gemma3ForCausalLM from tests/golden/gemma3_tiny.gguf, "
                f"float32, the global layer's attention as StreamingLLM's cache with {SINKS} "
                f"sinks and window {GLOBAL_WINDOW}, the sliding layers' as transformers'\n")
        f.write("# " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "\n")
        f.write(f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat()}\n")
        f.write(f"# largest |logit|: {np.abs(logits).max():.3f}; the attention function with the "
                f"whole context gives transformers' eager logits within {same:.2g}\n")
        f.write("# largest difference at positions " f"{evicted.start}..{PROMPT - 1} from: "
                + ", ".join(f"{m} {d.max():.3f} (smallest {d.min():.3f})"
                            for m, d in differ.items()) + "\n")
        f.write(f"window {MODEL_WINDOW}\n")
        f.write(f"sinks {SINKS}\n")
        f.write(f"global_window {GLOBAL_WINDOW}\n")
        f.write("tokens " + " ".join(str(i) for i in ids) + "\n")
        for p in range(MODEL_WINDOW, len(ids)):
            f.write(f"logits {p} " + " ".join(f"{v:.6g}" for v in logits[p]) + "\n")
    print(f"wrote {path}; differences from the wrong modes: "
          + ", ".join(f"{m} {d.max():.3f}" for m, d in differ.items()))


if __name__ == "__main__":
    main()
