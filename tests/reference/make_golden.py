#!/usr/bin/env python3
"""Writes the golden reference data in tests/golden/ for the default model.

The oracle is Hugging Face transformers (torch, CPU, float32, eager attention),
which loads the model straight from the GGUF file: it dequantizes every tensor
to f32 and un-permutes Q/K, so the reference sees exactly the weights our
runtime reads. llama.cpp (through llama-cpp-python) serves as a second,
independent oracle: for the tokenizer cross-check and for a second set of
greedy continuations (tests/golden/llamacpp_greedy.txt).

Tokenizer. transformers rebuilds the tokenizer from the GGUF metadata with a
plain GPT-2 ByteLevel pre-tokenizer, but SmolLM2's own tokenizer splits every
digit on its own before the GPT-2 regex (llama.cpp: pre-type "smollm"). The
two differ where whitespace precedes a digit (e.g. "a   42": GPT-2 keeps the
last space with the digits, the digit split does not). So this script installs
Sequence([Digits(individual_digits=True), ByteLevel(...)]) on the transformers
tokenizer, checks it against llama.cpp on every text and prompt (stopping if
they disagree), and uses it for all ids. The texts where the unmodified
transformers tokenizer differs are listed in the header of tokenizer.txt.

Oracle cross-check. llama.cpp also runs the same GGUF dequantized to f32 with
an f32 KV cache (no activation quantization); its logits and greedy tokens
must match transformers to rounding, and the headers record how closely.

Greedy decoding runs our own loop (full forward over the prompt, then one token
at a time with the KV cache, argmax each step, lowest id wins ties) for exactly
64 tokens, ignoring EOS.

Run:  python3 tests/reference/make_golden.py [--no-llamacpp]
"""

import argparse
import datetime
import importlib.metadata
import os
import platform
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import gguf  # noqa: E402
import jinja2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from tokenizers import pre_tokenizers  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from gguf_copy import sha256_of, write_f32_gguf  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL_DIR = os.path.join(REPO, "models")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GOLDEN_DIR = os.path.join(REPO, "tests", "golden")

GREEDY_STEPS = 64
LOGIT_TOP_K = 20
# One torch thread: bit-for-bit repeatable and immune to OpenMP spin-waiting when
# the machine is oversubscribed (two threads ran 30x slower under a parallel build).
TORCH_THREADS = 1
LLAMA_THREADS = 2

# Texts for tokenizer.txt: each exercises one tokenizer rule or script.
TOKENIZER_TEXTS = [
    "",
    "Hello",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "trailing spaces   ",
    "multiple     spaces   between words",
    "tabs\tand\t\ttabs",
    "line one\nline two\n\nline four\n",
    "\n\n\n",
    "   ",
    "windows\r\nline endings\r\n",
    "don't can't won't I'm you're we've they'll he'd",
    "I'LL DON'T WE'RE SHE'S It'S",
    "It's 2024 and 1999 was 25 years ago.",
    "pi = 3.14159, e = 2.71828",
    "1,000,000 dollars, $5.99 or 50%",
    "Total:   42 items\n  7 left\n\t8 done",
    "x = [\n    1,\n    22,\n    333,\n]",
    "phone: +1 (555) 123-4567",
    "abc123def 0x1F 1e-9 x\u00b2+y\u00b3",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m fa\u00e7ade",
    "Stra\u00dfe, Gr\u00f6\u00dfe, \u00dcberma\u00df",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\u4e2d\u6587\u6587\u672c\uff0c\u4f60\u597d\u4e16\u754c\uff01",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
    "emoji \U0001f600\U0001f44d\U0001f3fd ok",
    "family \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 "
    "and flags \U0001f1eb\U0001f1f7\U0001f1ef\U0001f1f5",
    "mixed: English, \u65e5\u672c\u8a9e, emoji \U0001f389, numbers 12345.",
    "def add(a, b):\n    return a + b\n",
    '#include <stdio.h>\nint main(void) { printf("%d\\n", 42); }',
    '<html><body class="x">Hi &amp; bye</body></html>',
    "!!! ??? ... --- *** ((())) ~~~",
    "https://example.com/path?q=1&r=two#frag",
    "user@example.com",
    "<|im_start|>user\nHi<|im_end|>",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
    "trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?"
    "<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text",
    "<|im_end|><|im_start|>",
    "a <|im_start|> b",
    "<|im_start <|im_end> |im_start|>",
    "\u00a0non-breaking\u2003em space\u3000ideographic",
    "zero\u200bwidth",
    "\ufb01 ligature and combining e\u0301",
    "\u0663 Arabic-Indic digits \u0661\u0662\u0663 full-width \uff11\uff12\uff13",
]

# Prompts for logits.txt: (name, chat messages or None, plain text).
LOGIT_PROMPTS = [
    ("plain_capital", None, "The capital of France is"),
    ("plain_story", None, "Once upon a time, in a small village by the sea, there lived an old fisherman who"),
    ("chat_math", [{"role": "user", "content": "What is 2+2?"}], None),
    ("chat_haiku", [{"role": "user", "content": "Write a haiku about the ocean."}], None),
]

LONG_TEXT = (
    "The Industrial Revolution began in Great Britain in the late 18th century and "
    "spread to Europe and North America over the following decades. It replaced hand "
    "production with machines, introduced new chemical and iron production processes, "
    "and made steam power and water power widely used. Factories grew around coal "
    "fields and ports, and millions of people moved from farms to rapidly growing "
    "cities. Working conditions were often harsh: long hours, low wages, and child "
    "labour were common until reforms in the 19th century. At the same time, the "
    "revolution raised living standards over the long run, created a middle class, "
    "and changed transport through railways and steamships."
)

# Cases for greedy.txt and llamacpp_greedy.txt: (name, chat messages or None, plain text).
GREEDY_CASES = [
    ("fact_chat", [{"role": "user", "content": "What is the capital of France?"}], None),
    ("code_chat", [{"role": "user", "content": "Write a Python function that returns the factorial of n."}], None),
    ("list_chat", [{"role": "user", "content": "List three benefits of regular exercise."}], None),
    ("math_chat", [{"role": "user", "content": "What is 17 * 23? Show your work."}], None),
    ("french_chat", [{"role": "user", "content": "Quelle est la capitale de l'Allemagne ?"}], None),
    (
        "multiturn_chat",
        [
            {"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
            {"role": "user", "content": "Name a primary color."},
            {"role": "assistant", "content": "Red is a primary color."},
            {"role": "user", "content": "Name another one."},
        ],
        None,
    ),
    ("long_chat", [{"role": "user", "content": LONG_TEXT + "\n\nSummarize the text above in two sentences."}], None),
    ("story_plain", None, "Once upon a time, in a small village by the sea,"),
    ("code_plain", None, "def fibonacci(n):\n"),
    (
        "math_plain",
        None,
        "Question: A train travels 120 km in 2 hours. What is its average speed in km/h?\nAnswer:",
    ),
]


def gguf_metadata(path):
    """Returns the few metadata values the script relies on."""
    reader = gguf.GGUFReader(path)
    fields = reader.fields
    return {
        "add_bos": bool(fields["tokenizer.ggml.add_bos_token"].contents()),
        "bos_id": int(fields["tokenizer.ggml.bos_token_id"].contents()),
        "pre": fields["tokenizer.ggml.pre"].contents(),
        "chat_template": fields["tokenizer.chat_template"].contents(),
    }


def versions():
    names = ["torch", "transformers", "tokenizers", "gguf", "numpy", "jinja2", "accelerate", "llama-cpp-python"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return f"python {platform.python_version()}, " + ", ".join(found)


class GoldenWriter:
    """Collects the lines of one golden file; header first, then the body."""

    def __init__(self, name, description, context):
        self.name = name
        self.header = [
            f"# {name}: {description}",
            "# generator: tests/reference/make_golden.py",
            f"# versions: {context['versions']}",
            f"# date: {context['date']}",
            f"# model: models/{MODEL_FILE} sha256 {context['sha256']}",
        ]
        self.body = []

    def note(self, text):
        for line in text.split("\n"):
            self.header.append(f"# {line}")

    def line(self, text):
        self.body.append(text)

    def write(self):
        path = os.path.join(GOLDEN_DIR, self.name)
        with open(path, "w", encoding="ascii", newline="\n") as f:
            f.write("\n".join(self.header + self.body) + "\n")
        return path


def hex_of(text):
    return text.encode("utf-8").hex()


def ids_str(ids):
    return " ".join(str(int(i)) for i in ids)


def f6(value):
    return f"{float(value):.6f}"


# ---------------------------------------------------------------- tokenizer


def install_digit_split(tokenizer):
    """Gives the GGUF-built tokenizer SmolLM2's real pre-tokenizer."""
    tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )


class Tokenizers:
    """The golden tokenizer (transformers + digit split) and its cross-checks."""

    def __init__(self, meta, llama_vocab):
        self.meta = meta
        self.raw = AutoTokenizer.from_pretrained(MODEL_DIR, gguf_file=MODEL_FILE)
        self.fixed = AutoTokenizer.from_pretrained(MODEL_DIR, gguf_file=MODEL_FILE)
        self.raw_pre = str(self.raw.backend_tokenizer.pre_tokenizer)
        install_digit_split(self.fixed)
        self.llama = llama_vocab
        self.disagreements = {"raw": [], "llama": []}

    def _bos(self):
        return [self.meta["bos_id"]] if self.meta["add_bos"] else []

    def encode_raw(self, text):
        return self._bos() + self.raw(text, add_special_tokens=False)["input_ids"]

    def encode_llama(self, text):
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=self.meta["add_bos"], special=True))

    def encode(self, text):
        """Golden ids; records any disagreement with the other tokenizers."""
        ids = self._bos() + self.fixed(text, add_special_tokens=False)["input_ids"]
        if self.encode_raw(text) != ids:
            self.disagreements["raw"].append(text)
        if self.llama is not None and self.encode_llama(text) != ids:
            self.disagreements["llama"].append(text)
        return ids


def describe_disagreements(toks, texts):
    seen_raw = [t for t in texts if t in toks.disagreements["raw"]]
    seen_llama = [t for t in texts if t in toks.disagreements["llama"]]
    lines = [
        "ids source: transformers GGUF tokenizer with its pre-tokenizer replaced by",
        "  Sequence([Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)])",
        f"  (SmolLM2's own pre-tokenizer; GGUF tokenizer.ggml.pre = {toks.meta['pre']!r}).",
        f"as built from GGUF, transformers' pre-tokenizer was: {toks.raw_pre}",
        f"texts where that unmodified transformers tokenizer differs ({len(seen_raw)}): "
        + (", ".join(ascii(t) for t in seen_raw) or "none"),
    ]
    if toks.llama is None:
        lines.append("llama.cpp cross-check: skipped (--no-llamacpp)")
    else:
        lines.append(
            f"texts where llama.cpp (vocab_only, add_bos={toks.meta['add_bos']}, special=True) differs "
            f"({len(seen_llama)}): " + (", ".join(ascii(t) for t in seen_llama) or "none")
        )
    return "\n".join(lines)


def write_tokenizer(toks, context):
    out = GoldenWriter("tokenizer.txt", "tokenizer ids for varied texts", context)
    for text in TOKENIZER_TEXTS:
        out.line(f"text {hex_of(text)}".rstrip())
        out.line(f"ids {ids_str(toks.encode(text))}".rstrip())
    out.note(f"add_bos = {toks.meta['add_bos']} (tokenizer.ggml.add_bos_token); special tokens in text parsed as special")
    out.note(describe_disagreements(toks, TOKENIZER_TEXTS))
    out.note("format: 'text <hex of UTF-8 bytes>' then 'ids <space-separated ids>' (both lines bare for the empty text)")
    return out.write()


# ---------------------------------------------------------------- prompts


def render_chat(toks, messages):
    """Renders messages with transformers and checks it against the GGUF template."""
    rendered = toks.fixed.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    template = jinja2.Environment().from_string(toks.meta["chat_template"])
    direct = template.render(messages=messages, add_generation_prompt=True)
    if rendered != direct:
        sys.exit(f"chat template mismatch:\n{rendered!r}\n{direct!r}")
    templated_ids = toks.fixed.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(templated_ids, "keys"):
        templated_ids = templated_ids["input_ids"]
    if list(templated_ids) != toks.encode(rendered):
        sys.exit(f"apply_chat_template ids differ from encoding the rendered text: {rendered!r}")
    return rendered


def prompt_text(toks, messages, plain):
    return plain if messages is None else render_chat(toks, messages)


# ---------------------------------------------------------------- transformers


def load_model():
    model = AutoModelForCausalLM.from_pretrained(
        MODEL_DIR, gguf_file=MODEL_FILE, dtype=torch.float32, attn_implementation="eager"
    )
    model.eval()
    return model


def full_logits(model, ids):
    """(len(ids), vocab) logits of one forward pass over the whole prompt."""
    with torch.inference_mode():
        return model(torch.tensor([ids])).logits[0].numpy()


def greedy_transformers(model, ids):
    """Returns (tokens, gaps, top1s, max_abs) for GREEDY_STEPS argmax steps."""
    tokens, gaps, top1s, max_abs = [], [], [], 0.0
    with torch.inference_mode():
        out = model(torch.tensor([ids]), use_cache=True)
        for step in range(GREEDY_STEPS):
            logits = out.logits[0, -1]
            max_abs = max(max_abs, float(logits.abs().max()))
            top2 = torch.topk(logits, 2)
            token = int(torch.argmax(logits))  # first (lowest) id among equal maxima
            tokens.append(token)
            top1s.append(float(top2.values[0]))
            gaps.append(float(top2.values[0] - top2.values[1]))
            if step + 1 < GREEDY_STEPS:
                out = model(torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)
    return tokens, gaps, top1s, max_abs


def prepare(toks, specs):
    """(name, chat?, prompt text, golden ids) for each (name, messages, plain) spec."""
    prepared = []
    for name, messages, plain in specs:
        text = prompt_text(toks, messages, plain)
        prepared.append((name, messages is not None, text, toks.encode(text)))
    return prepared


# ---------------------------------------------------------------- llama.cpp


def load_llama(path, vocab_only=False, f32_kv=False):
    from llama_cpp import GGML_TYPE_F32, Llama

    kv = {"type_k": GGML_TYPE_F32, "type_v": GGML_TYPE_F32} if f32_kv else {}
    return Llama(
        model_path=path,
        vocab_only=vocab_only,
        n_ctx=1024,
        n_batch=512,
        n_threads=LLAMA_THREADS,
        n_threads_batch=LLAMA_THREADS,
        seed=0,
        logits_all=False,
        verbose=False,
        **kv,
    )


def last_logits_llama(llm):
    """Logits of the last evaluated token (llama-cpp-python keeps no copy unless logits_all)."""
    import llama_cpp

    row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).copy()


def greedy_llama(llm, ids):
    """Returns (tokens, top1s, first-step logits) for GREEDY_STEPS argmax steps."""
    llm.reset()
    llm.eval(ids)
    tokens, top1s, first_logits = [], [], None
    for step in range(GREEDY_STEPS):
        logits = last_logits_llama(llm)
        if first_logits is None:
            first_logits = logits
        token = int(np.argmax(logits))
        tokens.append(token)
        top1s.append(float(logits[token]))
        if step + 1 < GREEDY_STEPS:
            llm.eval([token])
    return tokens, top1s, first_logits


def agreement(results_a, results_b):
    """(cases identical, tokens equal, total tokens, first divergence per case)."""
    full, equal, total, firsts = 0, 0, 0, {}
    for name, a in results_a.items():
        b = results_b[name]
        firsts[name] = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), GREEDY_STEPS)
        full += firsts[name] == GREEDY_STEPS
        equal += sum(x == y for x, y in zip(a, b))
        total += len(a)
    return full, equal, total, firsts


def f32_cross_check(logit_prompts, hf_logits, cases, hf_greedy):
    """Runs llama.cpp on the dequantized-f32 model with an f32 KV cache.

    Same weights as transformers, no activation quantization: any difference
    beyond rounding would mean the two implement different models. Returns
    (max |dlogit| over the logits prompts, agreement of greedy tokens).
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "f32.gguf")
        write_f32_gguf(os.path.join(MODEL_DIR, MODEL_FILE), path)
        llm = load_llama(path, f32_kv=True)
        max_diff = 0.0
        for name, _, _, ids in logit_prompts:
            for n in range(1, len(ids) + 1):  # every position, one prefix at a time
                llm.reset()
                llm.eval(ids[:n])
                max_diff = max(max_diff, float(np.abs(last_logits_llama(llm) - hf_logits[name][n - 1]).max()))
        tokens = {name: greedy_llama(llm, ids)[0] for name, _, _, ids in cases}
        llm.close()
    return max_diff, agreement(tokens, {n: r[0] for n, r in hf_greedy.items()})


# ---------------------------------------------------------------- writers


def top_k_str(logits, k):
    order = np.argsort(-logits, kind="stable")[:k]
    return " ".join(f"{int(i)}:{f6(logits[i])}" for i in order)


def write_logits(logit_prompts, hf_logits, notes, context):
    out = GoldenWriter("logits.txt", f"top-{LOGIT_TOP_K} logits of one full forward pass", context)
    max_abs = 0.0
    for name, _, text, ids in logit_prompts:
        logits = hf_logits[name]
        max_abs = max(max_abs, float(np.abs(logits).max()))
        n = len(ids)
        out.line(f"prompt {name}")
        out.line(f"text {hex_of(text)}")
        out.line(f"ids {ids_str(ids)}")
        for p in sorted({0, 1, n // 2, n - 1}):
            out.line(f"pos {p} top {top_k_str(logits[p], LOGIT_TOP_K)}")
    out.note(f"transformers: float32, eager attention, torch threads {TORCH_THREADS}; no BOS (add_bos_token false)")
    out.note(f"max |logit| over all vocab entries at all positions of all prompts: {max_abs:.6f}")
    for note in notes:
        out.note(note)
    out.note("format per prompt: 'prompt <name>', 'text <hex>', 'ids ...', then 'pos <p> top <id>:<logit> ...'")
    out.note("  (top entries in decreasing logit order, ties by lower id; positions 0, 1, n/2 and n-1)")
    return out.write()


def write_case_head(out, name, chat, text, ids):
    out.line(f"case {name} chat {int(chat)}")
    out.line(f"text {hex_of(text)}")
    out.line(f"prompt_ids {ids_str(ids)}")


def write_greedy(cases, hf_greedy, notes, context):
    out = GoldenWriter("greedy.txt", f"{GREEDY_STEPS}-token greedy continuations (transformers, f32)", context)
    max_abs, min_gap = 0.0, float("inf")
    for name, chat, text, ids in cases:
        tokens, gaps, top1s, case_max = hf_greedy[name]
        max_abs, min_gap = max(max_abs, case_max), min(min_gap, min(gaps))
        write_case_head(out, name, chat, text, ids)
        out.line(f"tokens {ids_str(tokens)}")
        out.line("gaps " + " ".join(f6(g) for g in gaps))
        out.line("top1 " + " ".join(f6(v) for v in top1s))
    out.note(f"max |logit| over all vocab entries at all steps: {max_abs:.6f}; smallest top1-top2 gap: {min_gap:.6f}")
    out.note(
        f"transformers: float32 weights and activations, eager attention, torch threads {TORCH_THREADS}.\n"
        "decoding: own loop, full forward over the prompt then one token per step with the KV cache;\n"
        f"argmax at every step (no sampling, no repetition penalty), exactly {GREEDY_STEPS} tokens, EOS ignored."
    )
    for note in notes:
        out.note(note)
    out.note(
        "chat cases: text is tokenizer.apply_chat_template(messages, add_generation_prompt=True), checked\n"
        "equal to the GGUF tokenizer.chat_template rendered with jinja2; rendered texts:"
    )
    for name, chat, text, _ in cases:
        if chat:
            out.note(f"  {name}: {text!r}".encode("ascii", "backslashreplace").decode())
    out.note("format per case: 'case <name> chat <0|1>', 'text <hex>', 'prompt_ids', 'tokens', 'gaps', 'top1'")
    return out.write()


def write_llama_greedy(model, cases, hf_greedy, context):
    llm = load_llama(os.path.join(MODEL_DIR, MODEL_FILE))
    out = GoldenWriter("llamacpp_greedy.txt", f"{GREEDY_STEPS}-token greedy continuations (llama.cpp)", context)
    tokens, diffs = {}, {}
    for name, chat, text, ids in cases:
        tokens[name], top1s, first = greedy_llama(llm, ids)
        diffs[name] = float(np.abs(first - full_logits(model, ids)[-1]).max())
        write_case_head(out, name, chat, text, ids)
        out.line(f"tokens {ids_str(tokens[name])}")
        out.line("top1 " + " ".join(f6(v) for v in top1s))
    full, equal, total, firsts = agreement(tokens, {n: r[0] for n, r in hf_greedy.items()})
    out.note(
        f"llama.cpp via llama-cpp-python on the Q4_1 file as is (activations quantized to 8 bits inside the\n"
        f"matmuls, default f16 KV cache), n_threads={LLAMA_THREADS}, n_batch=512, prompt evaluated in one batch,\n"
        "then one token per step; argmax of the last logits each step (temperature 0 / top-k 1), EOS ignored.\n"
        f"agreement with greedy.txt: {full}/{len(cases)} cases identical for all {GREEDY_STEPS} tokens, "
        f"{equal}/{total} tokens equal position-by-position. Per case: first step that differs, and\n"
        "max |dlogit| over the vocab at step 0:"
    )
    for name in tokens:
        out.note(f"  {name}: first divergence at step {firsts[name]}, step-0 max |dlogit| {diffs[name]:.4f}")
    out.note("format per case: 'case <name> chat <0|1>', 'text <hex>', 'prompt_ids', 'tokens', 'top1'")
    return out.write(), (full, equal, total, firsts)


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-llamacpp", action="store_true", help="skip the llama.cpp cross-checks")
    args = parser.parse_args()
    use_llama = not args.no_llamacpp

    started = time.time()
    torch.manual_seed(0)
    torch.set_num_threads(TORCH_THREADS)
    torch.use_deterministic_algorithms(True)
    os.makedirs(GOLDEN_DIR, exist_ok=True)

    model_path = os.path.join(MODEL_DIR, MODEL_FILE)
    context = {
        "versions": versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "sha256": sha256_of(model_path),
    }
    meta = gguf_metadata(model_path)
    toks = Tokenizers(meta, load_llama(model_path, vocab_only=True) if use_llama else None)
    print("wrote", write_tokenizer(toks, context))

    model = load_model()
    logit_prompts = prepare(toks, LOGIT_PROMPTS)
    cases = prepare(toks, GREEDY_CASES)
    if toks.disagreements["llama"]:
        sys.exit(f"llama.cpp tokenizes differently: {toks.disagreements['llama']}")
    hf_logits = {name: full_logits(model, ids) for name, _, _, ids in logit_prompts}
    hf_greedy = {name: greedy_transformers(model, ids) for name, _, _, ids in cases}
    print(f"transformers done at {time.time() - started:.1f} s")

    logit_notes, greedy_notes = [], []
    if use_llama:
        max_diff, (full, equal, total, _) = f32_cross_check(logit_prompts, hf_logits, cases, hf_greedy)
        setup = "llama.cpp on the same GGUF dequantized to f32 with an f32 KV cache"
        logit_notes.append(f"cross-check, {setup}:\n  max |dlogit| over all vocab entries at all positions: {max_diff:.6f}")
        greedy_notes.append(
            f"cross-check, {setup}: {full}/{len(cases)} cases identical, {equal}/{total} tokens equal"
        )
        print(logit_notes[-1], greedy_notes[-1], sep="\n")
    print("wrote", write_logits(logit_prompts, hf_logits, logit_notes, context))
    print("wrote", write_greedy(cases, hf_greedy, greedy_notes, context))
    if use_llama:
        path, (full, equal, total, firsts) = write_llama_greedy(model, cases, hf_greedy, context)
        print("wrote", path)
        print(f"llama.cpp Q4_1 vs transformers: {full}/{len(cases)} cases identical, {equal}/{total} tokens; {firsts}")
    print(f"done in {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
