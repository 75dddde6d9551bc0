#!/usr/bin/env python3
"""Writes tests/golden/gemma3_greedy.txt: greedy continuations of Gemma 3 270M.

The oracle is Hugging Face transformers (torch, CPU, float32, eager attention),
which loads models/gemma-3-270m-q4_k_m.gguf itself: it dequantizes every tensor
to f32 (so it sees exactly the weights staticlm reads), builds the Gemma 3 text
model with its hybrid attention (sliding window 512 on five of every six
layers) and tokenizes with the tokenizer it rebuilds from the GGUF metadata.
The prompts' ids in the golden file are transformers' ids (BOS first, as the
file's add_bos_token says), so the test of the model does not depend on
staticlm's tokenizer; the text is kept for the tokenizer tests.

Eight prompts, two of them longer than the window (about 700 and 1,400 tokens,
the start of the GPL-3 text from Debian's /usr/share/common-licenses/GPL-3) so
that the sliding layers must forget exactly what transformers forgets.
Greedy decoding is this script's own loop: a full forward over the prompt,
then one token per step with the cache; argmax (lowest id among equal maxima)
for exactly 32 tokens, EOS ignored. Each step's top-1 minus top-2 logit gap is
recorded for the near-tie rule of the test (tests/golden_test.cpp).

The format is that of tests/golden/greedy.txt (tests/support/golden_files.h).
Takes about 10 minutes on 2 cores (most of it transformers rebuilding the
262,144-token tokenizer and dequantizing the file).

Run:  python3 tests/reference/make_gemma3_greedy_golden.py
"""

import datetime
import hashlib
import importlib.metadata
import os
import platform

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL_DIR = os.path.join(REPO, "models")
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
GOLDEN = os.path.join(REPO, "tests", "golden", "gemma3_greedy.txt")
STEPS = 32
LONG_SOURCE = "/usr/share/common-licenses/GPL-3"

PROMPTS = [
    ("capital", "The capital of France is"),
    ("story", "Once upon a time, in a small village by the sea, there lived"),
    ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("list", "Three benefits of regular exercise are:\n1."),
    ("math", "Question: What is 17 multiplied by 23?\nAnswer:"),
    ("german", "Die Hauptstadt von Deutschland ist"),
]
LONG_TOKENS = [("long_700", 700), ("long_1400", 1400)]


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def versions():
    names = ["torch", "transformers", "tokenizers", "gguf", "numpy"]
    return f"python {platform.python_version()}, " + ", ".join(
        f"{n} {importlib.metadata.version(n)}" for n in names)


def long_prompt(tokenizer, text, tokens):
    """The longest prefix of `text`, cut at a line end, with at most `tokens` ids."""
    lines = text.split("\n")
    best = ""
    for i in range(1, len(lines) + 1):
        candidate = "\n".join(lines[:i])
        if len(tokenizer(candidate).input_ids) > tokens:
            break
        best = candidate
    return best


def greedy(model, ids):
    tokens, gaps, top1s, max_abs = [], [], [], 0.0
    with torch.inference_mode():
        out = model(torch.tensor([ids]), use_cache=True)
        for step in range(STEPS):
            logits = out.logits[0, -1]
            max_abs = max(max_abs, float(logits.abs().max()))
            top2 = torch.topk(logits, 2)
            token = int(torch.argmax(logits))
            tokens.append(token)
            top1s.append(float(top2.values[0]))
            gaps.append(float(top2.values[0] - top2.values[1]))
            if step + 1 < STEPS:
                out = model(torch.tensor([[token]]), past_key_values=out.past_key_values,
                            use_cache=True)
    return tokens, gaps, top1s, max_abs


def main():
    torch.set_num_threads(2)
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR, gguf_file=MODEL_FILE)
    model = AutoModelForCausalLM.from_pretrained(
        MODEL_DIR, gguf_file=MODEL_FILE, dtype=torch.float32, attn_implementation="eager").eval()
    assert model.config.sliding_window == 512, model.config.sliding_window
    with open(LONG_SOURCE, encoding="utf-8") as f:
        source = f.read()
    cases = list(PROMPTS) + [(n, long_prompt(tokenizer, source, t)) for n, t in LONG_TOKENS]
    lines, max_abs, min_gap = [], 0.0, float("inf")
    for name, text in cases:
        ids = tokenizer(text).input_ids
        assert ids[0] == tokenizer.bos_token_id, ids[:3]
        tokens, gaps, top1s, case_max = greedy(model, ids)
        max_abs, min_gap = max(max_abs, case_max), min(min_gap, min(gaps))
        print(f"{name}: {len(ids)} prompt ids -> {tokenizer.decode(tokens)!r}", flush=True)
        lines += [f"case {name} chat 0", f"text {text.encode('utf-8').hex()}",
                  "prompt_ids " + " ".join(map(str, ids)),
                  "tokens " + " ".join(map(str, tokens)),
                  "gaps " + " ".join(f"{g:.6f}" for g in gaps),
                  "top1 " + " ".join(f"{v:.6f}" for v in top1s)]
    header = [
        f"# gemma3_greedy.txt: {STEPS}-token greedy continuations of Gemma 3 270M (transformers, f32)",
        "# generator: tests/reference/make_gemma3_greedy_golden.py",
        f"# versions: {versions()}",
        f"# date: {datetime.date.today().isoformat()}",
        f"# model: models/{MODEL_FILE} sha256 {sha256_of(os.path.join(MODEL_DIR, MODEL_FILE))}",
        f"# max |logit| over all vocab entries at all steps: {max_abs:.6f}; smallest top1-top2 gap: {min_gap:.6f}",
        "# transformers: float32 weights and activations, eager attention, sliding window 512 on the",
        "# layers transformers' Gemma3 config marks sliding; ids from transformers' GGUF tokenizer.",
        "# decoding: own loop, full forward over the prompt then one token per step with the cache;",
        f"# argmax at every step, exactly {STEPS} tokens, EOS ignored.",
        f"# long prompts: the start of {LONG_SOURCE} cut at a line end below 700 / 1400 tokens.",
        "# format per case: 'case <name> chat <0|1>', 'text <hex>', 'prompt_ids', 'tokens', 'gaps', 'top1'",
    ]
    with open(GOLDEN, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(header + lines) + "\n")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
