#!/usr/bin/env python3
"""Makes the tiny test models of the five model families (issue 14, part 6) and their goldens.

For each family -- qwen2, qwen3, llama (Llama 3.2 style), phi3, mistral -- with a fixed seed:

1. A tokenizer: byte-level BPE trained with the `tokenizers` package on a generated corpus,
   with the family's split regex (Qwen2's for qwen2/qwen3, Llama 3's for llama) and special
   tokens; or, for mistral and phi3 (whose real tokenizers are Llama 2's SentencePiece BPE with
   byte fallback), a SentencePiece BPE model trained with `sentencepiece` (tokenizer.model)
   that transformers turns into tokenizer.json. The chat template is the real family's text,
   committed in tests/reference/chat_templates/<family>.jinja.
2. A random-weight model from transformers' config class for the family (2-3 layers,
   d_model 128, 4 query heads over 2 KV heads), with each family's feature switched on:
   qwen2 q/k/v biases (random, not zero), qwen3 q/k RMSNorm, llama rope_type "llama3" scaling
   with tied embeddings, phi3 fused qkv/gate_up and "longrope" short/long factors, mistral a
   sliding window of 16 (shorter than every golden sequence). Norm weights are random too, so a
   runtime that ignores one is caught. Saved as a Hugging Face folder
   tests/models/families/<family>/hf/ (config.json, model.safetensors, tokenizer.json,
   tokenizer_config.json, generation_config.json; tokenizer.model for the SentencePiece ones)
   with weights stored as F32 (qwen2), BF16 (qwen3, llama) or F16 (phi3, mistral).
3. GGUF files tests/models/families/<family>/<family>-{f16,q8_0}.gguf made by llama.cpp's own
   convert_hf_to_gguf.py, run in a subprocess with two things told to it in-process (no file
   of the llama.cpp tree is changed or copied): the pre-tokenizer name for the byte-level
   vocabularies (get_vocab_base_pre identifies a vocabulary by hashing its tokenization of a
   fixed text, which a trained toy vocabulary cannot match; it is replaced by a function
   returning "qwen2" or "llama-bpe"), and, for mistral, llama.attention.sliding_window (the
   converter drops Mistral's window; llama.cpp runs Mistral v0.1 without it).
4. tests/golden/families/<family>.txt from transformers (float32, eager attention): greedy
   continuations for each weight variant (the folder's weights; the same rounded to f16 as the
   F16 GGUF holds them; and through Q8_0 as the Q8_0 GGUF holds them -- the script checks every
   tensor of both GGUFs against these values), tokenizations of tricky texts, and chat-template
   renderings of a committed conversation set. Format: tests/reference/README.md.

Run (about 2 minutes on 2 cores, no network):

    python3 tests/reference/make_family_models.py /work/llama-src/llama.cpp [--family NAME ...]

Needs: transformers 5.23, tokenizers 0.23, torch, sentencepiece and protobuf (for the
SentencePiece families), numpy, and the llama.cpp source tree of llama-cpp-python 0.3.36
(`pip download --no-binary :all: --no-deps llama-cpp-python==0.3.36`, unpacked; its
vendor/llama.cpp directory) for convert_hf_to_gguf.py and its gguf-py, which the script uses
for the GGUF checks too. The tree is only read. Output is deterministic except the `# date:`
lines and the GGUFs' general.* naming metadata the converter writes (unchanged in practice).
"""

import argparse
import datetime
import importlib.metadata
import io
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS_DIR = os.path.join(REPO, "tests", "models", "families")
GOLDEN_DIR = os.path.join(REPO, "tests", "golden", "families")
TEMPLATE_DIR = os.path.join(REPO, "tests", "reference", "chat_templates")

STEPS = 24  # greedy tokens per case
DATE_STRING = "26 Jul 2024"  # passed to every chat template (Llama 3.2's would read the clock)

# The split regexes of the real tokenizer.json files (public data).
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# transformers 5's LlamaTokenizer class (the tokenizer_class of the real Mistral and Phi-3 files)
# ignores tokenizer.json's normalizer and pre-tokenizes with Metaspace, which differs from
# SentencePiece (and from the file) on texts that start with a space. The generic class uses
# tokenizer.json as written, so the goldens are what the file and SentencePiece say.
SPM_TOKENIZER_CLASS = "PreTrainedTokenizerFast"

COMMON = dict(hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2,
              rms_norm_eps=1e-5, attn_implementation="eager")

FAMILIES = {
    "qwen2": dict(
        seed=201, arch="Qwen2ForCausalLM", tokenizer="bpe", regex=QWEN2_REGEX, nfc=True,
        pre="qwen2", vocab=600, config_vocab=640, dtype=torch.float32, layers=2,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], added=[],
        tok=dict(bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>"),
        tokenizer_class="Qwen2Tokenizer", eos_ids=["<|im_end|>", "<|endoftext|>"],
        config=dict(rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                    max_position_embeddings=256, tie_word_embeddings=False,
                    use_sliding_window=False)),
    "qwen3": dict(
        seed=301, arch="Qwen3ForCausalLM", tokenizer="bpe", regex=QWEN2_REGEX, nfc=True,
        pre="qwen2", vocab=600, config_vocab=640, dtype=torch.bfloat16, layers=3,
        special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], added=["<think>", "</think>"],
        tok=dict(bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>"),
        tokenizer_class="Qwen2Tokenizer", eos_ids=["<|im_end|>", "<|endoftext|>"],
        config=dict(rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                    head_dim=32, max_position_embeddings=256, tie_word_embeddings=False,
                    use_sliding_window=False)),
    "llama": dict(
        seed=401, arch="LlamaForCausalLM", tokenizer="bpe", regex=LLAMA3_REGEX, nfc=False,
        pre="llama-bpe", vocab=512, config_vocab=512, dtype=torch.bfloat16, layers=2,
        special=["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                 "<|end_header_id|>", "<|eot_id|>"], added=[],
        tok=dict(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"),
        tokenizer_class="PreTrainedTokenizerFast",
        eos_ids=["<|end_of_text|>", "<|eot_id|>"],
        # Llama 3.2's scaling (factor 32, low 1, high 4) with an original context of 32, so that
        # the golden sequences (beyond 32 positions) reach the scaled frequencies.
        config=dict(rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 32},
                    max_position_embeddings=256, tie_word_embeddings=True, mlp_bias=False,
                    attention_bias=False)),
    "phi3": dict(
        seed=501, arch="Phi3ForCausalLM", tokenizer="spm", vocab=500, config_vocab=512,
        dtype=torch.float16, layers=2,
        # Phi-3's added tokens; the chat markers strip whitespace on their right, as in Phi-3.
        added_spm=[("<|endoftext|>", False), ("<|assistant|>", True), ("<|system|>", True),
                   ("<|end|>", True), ("<|user|>", True)],
        tok=dict(bos_token="<s>", eos_token="<|endoftext|>", unk_token="<unk>",
                 pad_token="<|endoftext|>"),
        tokenizer_class=SPM_TOKENIZER_CLASS, add_bos=False,
        eos_ids=["<|endoftext|>", "<|assistant|>", "<|end|>"],
        # longrope ("su") with an original context of 128 (the golden sequences stay inside it,
        # so the short factors apply) extended to 512, which makes the attention factor
        # sqrt(1 + ln 4 / ln 128).
        config=dict(max_position_embeddings=512, original_max_position_embeddings=128,
                    tie_word_embeddings=False, sliding_window=None, longrope=True),
        llamacpp_note="llama.cpp pads n_ctx to 256 > 128 and so takes the long factors; "
                      "transformers with short_factor = long_factor gives llama.cpp's tokens"),
    "mistral": dict(
        seed=601, arch="MistralForCausalLM", tokenizer="spm", vocab=512, config_vocab=512,
        dtype=torch.float16, layers=3, added_spm=[],
        tok=dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>"),
        tokenizer_class=SPM_TOKENIZER_CLASS, add_bos=True, eos_ids=["</s>"],
        config=dict(rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                    max_position_embeddings=256, tie_word_embeddings=False, sliding_window=16),
        llamacpp_note="llama.cpp runs the llama architecture without a window (it ignores "
                      "llama.attention.sliding_window)"),
}

# Greedy prompts: plain texts (tokenized as the tokenizer does by default) and one chat.
PLAIN_PROMPTS = [
    ("story", "Once upon a time, the people of the long river would look for water"),
    ("numbers", "The first number is 12345 and the second 3.14159; together they make"),
    ("code", "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n"),
    ("unicode", "Café 日本語 — naïve Ünïcödé words: über, straße, déjà vu, 😀 and"),
]
CHAT_PROMPT = [{"role": "user", "content": "Write one sentence about the water of the river."}]

# Tokenization texts: digits, whitespace, newlines, Unicode, contractions, special-token text.
TOKENIZE_TEXTS = [
    "", " ", "  ", "\n", "\n\n\n", "\t", " \t\n ", "Hello", " Hello", "Hello world",
    "Hello  world", "hello   world  ", "1", "12", "123", "1234", "12345678901", "3.14159",
    "1,000,000 and 42nd", "x = 2**10 - 7;", "I've been 'told' he's there, you'll see",
    "DON'T SHOUT, we're FINE", "line one\nline two\r\nline three", "    indented\n\tand tabbed",
    "Café naïve façade", "Ünïcödé straße", "e\u0301 versus \u00e9 (NFD vs NFC)",
    "日本語のテキスト", "中文字符和English混合", "Привет, мир!", "Γειά σου κόσμε",
    "مرحبا بالعالم", "😀 emoji 🦙🦙 and 👩\u200d💻 and 🇫🇷", "٣٤٥ arabic digits ¾ ½",
    "<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>",
    "<|user|>\nhi<|end|>\n<|assistant|>", "<s>[INST] hi [/INST]</s>", "<think>\nhmm\n</think>",
    "a<|endoftext|>b", "<unk> <s> </s>", "The water of the long river, 2024-11-25.",
]

# Conversations rendered with apply_chat_template (the committed set of part 4).
CONVERSATIONS = [
    ("system_user", True, [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"}]),
    ("user_only", True, [{"role": "user", "content": "Hello!"}]),
    ("multi_turn", True, [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Name a colour."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another one?"}]),
    ("multi_turn_no_system", True, [
        {"role": "user", "content": "Count to three."},
        {"role": "assistant", "content": "1, 2, 3."},
        {"role": "user", "content": "Now backwards."}]),
    ("no_generation_prompt", False, [
        {"role": "user", "content": "Say yes."},
        {"role": "assistant", "content": "Yes."}]),
    ("whitespace_unicode", True, [
        {"role": "system", "content": "  Réponds en français.  \n"},
        {"role": "user", "content": "\nQuel temps fait-il à Zürich ? 😀\n\n"}]),
    ("assistant_thinking", True, [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "<think>\nEasy.\n</think>\n\n4"},
        {"role": "user", "content": "And 3+3?"}]),
]


def corpus_lines(seed):
    """A generated training text: English-like sentences, numbers, code, several scripts."""
    rng = random.Random(seed)
    words = ("the of and a to in is you that it he was for on are as with his they at be this have "
             "from or one had by word but not what all were we when your can said there use an each "
             "which she do how their if will up other about out many then them these so some her "
             "would make like him into time has look two more write go see number no way could "
             "people my than first water been call who oil its now find long down day did get come "
             "made may part river once upon story sentence capital colour answer hello world count "
             "three backwards blue yes print return def add").split()
    foreign = ("café naïve façade über straße déjà vu Zürich français réponds temps "
               "日本語 テキスト 中文 字符 混合 Привет мир Γειά σου κόσμε مرحبا بالعالم 😀 🦙").split()
    code = ["def f(x):\n    return x * 2\n", "for i in range(10):\n\tprint(i)\n",
            "if (a == b) { return 0; }\n", "x = [1, 2, 3]  # list\n", "{\"key\": \"value\"}\n"]
    lines = []
    for _ in range(3000):
        kind = rng.random()
        if kind < 0.6:
            n = rng.randint(4, 16)
            s = " ".join(rng.choice(words) for _ in range(n))
            s = s[0].upper() + s[1:] + rng.choice([".", ",", "!", "?", ";", ":"])
            if rng.random() < 0.3:
                s += " " + str(rng.randint(0, 10 ** rng.randint(1, 7)))
            if rng.random() < 0.2:
                s = s.replace(" you", " you'll").replace(" he ", " he's ")
        elif kind < 0.75:
            s = " ".join(rng.choice(foreign + words) for _ in range(rng.randint(3, 9)))
        elif kind < 0.9:
            s = rng.choice(code)
        else:
            s = f"{rng.randint(0, 99999)} {rng.random():.4f} {rng.randint(1, 31)}-{rng.randint(1, 12)}"
        lines.append(s)
    return lines


def hex_of(text):
    return text.encode("utf-8").hex()


# ---------------------------------------------------------------------------------------------
# Tokenizers


def build_bpe_tokenizer(spec, lines, hf_dir):
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
    from tokenizers import pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(ignore_merges=spec["pre"] == "llama-bpe"))
    if spec["nfc"]:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(spec["regex"]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    n_extra = len(spec["special"]) + len(spec["added"])
    trainer = trainers.BpeTrainer(vocab_size=spec["vocab"] - n_extra, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    tok.train_from_iterator(lines, trainer)
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in spec["special"]])
    tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in spec["added"]])
    if spec["tok"].get("bos_token"):
        bos = spec["tok"]["bos_token"]
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    assert tok.get_vocab_size() == spec["vocab"], tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **spec["tok"])
    fast.save_pretrained(hf_dir)
    return tok


def build_spm_tokenizer(spec, lines, hf_dir, scratch):
    import sentencepiece as spm
    from tokenizers import AddedToken
    from transformers import AutoTokenizer

    # Llama 2's trainer settings as far as they matter here: BPE, byte fallback, digits split,
    # a dummy prefix, whitespace kept as is, no normalization; <unk> <s> </s> = 0 1 2. Trained
    # from an iterator into memory, so no (temporary) path is recorded in the model's trainer
    # spec and the file is the same on every run.
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="bpe",
        vocab_size=spec["vocab"], byte_fallback=True, split_digits=True, add_dummy_prefix=True,
        remove_extra_whitespaces=False, normalization_rule_name="identity",
        allow_whitespace_only_pieces=True, character_coverage=0.9995, unk_id=0, bos_id=1,
        eos_id=2, pad_id=-1, num_threads=1, minloglevel=2, shuffle_input_sentence=False)
    src = os.path.join(scratch, "spm_folder")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "tokenizer.model"), "wb") as f:
        f.write(model.getvalue())
    with open(os.path.join(src, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "LlamaTokenizer", "legacy": True,
                   "add_bos_token": spec["add_bos"], "add_eos_token": False, **spec["tok"]}, f)
    fast = AutoTokenizer.from_pretrained(src)
    if spec["added_spm"]:
        fast.add_special_tokens({"additional_special_tokens": [
            AddedToken(t, special=True, normalized=False, rstrip=rstrip, lstrip=False)
            for t, rstrip in spec["added_spm"]]}, replace_extra_special_tokens=False)
    fast.save_pretrained(hf_dir)
    shutil.copy(os.path.join(src, "tokenizer.model"), os.path.join(hf_dir, "tokenizer.model"))
    # transformers writes a Metaspace pre-tokenizer, which (unlike SentencePiece) adds no "▁"
    # to a text that starts with a space. The real Llama 2 / Mistral / Phi-3 tokenizer.json
    # files carry the older layout, which agrees with SentencePiece: a normalizer that prepends
    # "▁" and replaces every space, and no pre-tokenizer.
    path = os.path.join(hf_dir, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    data["pre_tokenizer"] = None
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
    sp = spm.SentencePieceProcessor(model_file=os.path.join(src, "tokenizer.model"))
    return sp


def finish_tokenizer_config(spec, hf_dir, template):
    path = os.path.join(hf_dir, "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["tokenizer_class"] = spec["tokenizer_class"]
    cfg["chat_template"] = template
    if spec["tokenizer"] == "spm":
        cfg["add_bos_token"] = spec["add_bos"]
        cfg["add_eos_token"] = False
        cfg["legacy"] = True
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")


def check_tokenizer(spec, hf_tok, reference, lines):
    """transformers' tokenizer (as loaded from the folder) against the trained one."""
    texts = TOKENIZE_TEXTS + lines[:300]
    bad = []
    for text in texts:
        ours = hf_tok(text, add_special_tokens=False)["input_ids"]
        if spec["tokenizer"] == "bpe":
            ref = reference.encode(text, add_special_tokens=False).ids
        else:
            if any(s in text for s in ["<|", "<s>", "</s>", "<unk>"]):
                continue  # sentencepiece itself does not parse added/special token text
            ref = reference.encode(text)
        if ours != ref:
            bad.append(text)
    return bad


# ---------------------------------------------------------------------------------------------
# Models


def make_config(spec, vocab_size, token_ids):
    import transformers
    cls = getattr(transformers, spec["arch"].replace("ForCausalLM", "Config"))
    extra = dict(spec["config"])
    longrope = extra.pop("longrope", False)
    if longrope:
        half = COMMON["hidden_size"] // COMMON["num_attention_heads"] // 2
        rng = np.random.default_rng(spec["seed"])
        short = np.sort(1.0 + 2.0 * rng.random(half)).round(4).tolist()
        long = np.sort(1.0 + 15.0 * rng.random(half)).round(4).tolist()
        extra["rope_parameters"] = {"rope_type": "longrope", "rope_theta": 10000.0,
                                    "short_factor": short, "long_factor": long,
                                    "original_max_position_embeddings":
                                        extra["original_max_position_embeddings"]}
    bos = token_ids.get(spec["tok"].get("bos_token"))
    eos = [token_ids[t] for t in spec["eos_ids"]]
    pad = token_ids.get(spec["tok"].get("pad_token"))
    return cls(vocab_size=vocab_size, num_hidden_layers=spec["layers"], bos_token_id=bos,
               eos_token_id=eos[0] if len(eos) == 1 else eos, pad_token_id=pad,
               initializer_range=0.2, **COMMON, **extra)


def randomize(model, seed):
    """Weights with a std large enough for lively greedy paths; norms and biases not trivial."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))


def greedy(model, prompt_ids, steps=STEPS):
    ids = list(prompt_ids)
    tokens, gaps = [], []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([ids])).logits[0, -1].float()
            top = torch.topk(logits, 2)
            # argmax with ties to the lowest id, as the C++ greedy sampler does
            best = int(torch.nonzero(logits == top.values[0])[0, 0])
            tokens.append(best)
            gaps.append(float(top.values[0] - top.values[1]))
            ids.append(best)
    return tokens, gaps


def last_logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()


def ablated_config(spec, config):
    """The config without the family's feature, or None (the feature is not a config switch)."""
    import copy
    c = copy.deepcopy(config)
    name = spec["arch"]
    if name == "LlamaForCausalLM":
        c.rope_parameters = {"rope_type": "default", "rope_theta": 500000.0}
    elif name == "MistralForCausalLM":
        c.sliding_window = None
    elif name == "Phi3ForCausalLM":
        c.rope_parameters = {"rope_type": "default", "rope_theta": 10000.0}
    elif name != "Qwen2ForCausalLM":  # Qwen2's feature is in the weights (zeroed by the caller)
        return None
    return c


# ---------------------------------------------------------------------------------------------
# GGUF conversion and the weight variants the GGUFs hold

CONVERT_WRAPPER = r"""
import runpy, sys
src, pre, window = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, src + "/gguf-py")
sys.path.insert(0, src)
import conversion.base as base
import conversion.llama as llama
if pre != "-":
    # A toy vocabulary's hash is unknown to the converter: name the family's pre-tokenizer.
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
if window:
    # The converter does not write Mistral's window: add the key llama.cpp uses for it.
    original = llama.LlamaModel.set_gguf_parameters
    def with_window(self):
        original(self)
        self.gguf_writer.add_sliding_window(window)
    llama.LlamaModel.set_gguf_parameters = with_window
sys.argv = [src + "/convert_hf_to_gguf.py"] + sys.argv[4:]
runpy.run_path(src + "/convert_hf_to_gguf.py", run_name="__main__")
"""


def convert(llama_src, spec, hf_dir, out, outtype):
    pre = spec.get("pre", "-")
    window = spec["config"].get("sliding_window") or 0
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-c", CONVERT_WRAPPER, llama_src, pre, str(window), hf_dir,
           "--outtype", outtype, "--outfile", out]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-8000:])
        raise SystemExit(f"convert_hf_to_gguf.py failed for {out}")


def q8_0_round_trip(gguf_mod, t):
    data = t.detach().float().numpy()
    q = gguf_mod.quants.quantize(data, gguf_mod.GGMLQuantizationType.Q8_0)
    return torch.from_numpy(gguf_mod.quants.dequantize(q, gguf_mod.GGMLQuantizationType.Q8_0)
                            .reshape(data.shape).astype(np.float32))


def variant_state(gguf_mod, model, variant):
    """The model's weights as the GGUF of `variant` holds them (2-D tensors rounded, 1-D f32)."""
    state = {}
    for name, p in model.state_dict().items():
        t = p.detach().float()
        if t.dim() >= 2 and variant == "f16":
            t = t.half().float()
        elif t.dim() >= 2 and variant == "q8_0":
            t = q8_0_round_trip(gguf_mod, t) if t.shape[-1] % 32 == 0 else t.half().float()
        state[name] = t
    return state


def check_gguf_tensors(gguf_mod, path, state, spec):
    """Every tensor of the GGUF, dequantized, equals a tensor of `state` as a sorted multiset (the
    converter permutes the rows of Llama's Q and K; that is the only change it makes)."""
    reader = gguf_mod.GGUFReader(path)
    pools = {}
    for t in state.values():
        v = np.sort(t.numpy().ravel())
        pools.setdefault(v.size, []).append(v)
    types = {}
    for tensor in reader.tensors:
        if tensor.name.startswith("rope_") or tensor.name.endswith("rope_freqs.weight"):
            continue
        data = gguf_mod.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        v = np.sort(data.ravel())
        types[tensor.tensor_type.name] = types.get(tensor.tensor_type.name, 0) + 1
        if not any(np.array_equal(v, w) for w in pools.get(v.size, [])):
            raise SystemExit(f"{path}: tensor {tensor.name} ({tensor.tensor_type.name}) matches no "
                             "weight of the variant the script computes goldens for")
    return types, reader


# ---------------------------------------------------------------------------------------------
# Cross-check: llama.cpp on the GGUFs (informative; nothing golden comes from it)


def llamacpp_agreement(path, cases):
    """One header line: how llama.cpp's greedy tokens on `path` compare with the golden ones."""
    try:
        import llama_cpp
    except ImportError:
        return "llama.cpp cross-check skipped (llama_cpp not importable)"
    llm = llama_cpp.Llama(model_path=path, n_ctx=128, n_batch=128, n_threads=1, verbose=False)
    equal, firsts = 0, []
    for case_name, ids, tokens, gaps in cases:
        llm.reset()
        llm.eval(ids)
        step = None
        for i, want in enumerate(tokens):
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1),
                                           shape=(llm.n_vocab(),))
            got = int(np.argmax(logits))
            if got != want:
                step = i
                break
            llm.eval([got])
        if step is None:
            equal += 1
        else:
            firsts.append(f"{case_name}@{step} (gap {gaps[step]:.2f})")
    return (f"llama.cpp {llama_cpp.__version__} on {os.path.basename(path)} (n_ctx {llm.n_ctx()}): "
            f"{equal} of {len(cases)} continuations equal" +
            (f"; first differences {', '.join(firsts)}" if firsts else ""))


# ---------------------------------------------------------------------------------------------
# Goldens


def write_family(llama_src, name, spec, gguf_mod):
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(spec["seed"])
    family_dir = os.path.join(MODELS_DIR, name)
    hf_dir = os.path.join(family_dir, "hf")
    shutil.rmtree(family_dir, ignore_errors=True)
    os.makedirs(hf_dir)
    lines = corpus_lines(spec["seed"])
    with open(os.path.join(TEMPLATE_DIR, f"{'llama3' if name == 'llama' else name}.jinja"),
              encoding="utf-8") as f:
        template = f.read()
    with tempfile.TemporaryDirectory() as scratch:
        if spec["tokenizer"] == "bpe":
            reference = build_bpe_tokenizer(spec, lines, hf_dir)
        else:
            reference = build_spm_tokenizer(spec, lines, hf_dir, scratch)
        finish_tokenizer_config(spec, hf_dir, template)
    tok = AutoTokenizer.from_pretrained(hf_dir)
    mismatches = check_tokenizer(spec, tok, reference, lines)
    vocab = tok.get_vocab()
    token_ids = {t: vocab[t] for t in vocab}
    config = make_config(spec, spec["config_vocab"], token_ids)
    model = getattr(transformers, spec["arch"])(config)
    randomize(model, spec["seed"])
    model = model.to(spec["dtype"])
    model.generation_config = transformers.GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id, do_sample=False)
    model.save_pretrained(hf_dir)
    for leftover in os.listdir(hf_dir):
        if leftover not in {"config.json", "model.safetensors", "tokenizer.json",
                            "tokenizer_config.json", "generation_config.json", "tokenizer.model"}:
            os.remove(os.path.join(hf_dir, leftover))

    # The oracle: the folder as transformers loads it, computed in float32.
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    ggufs = {}
    for outtype in ("f16", "q8_0"):
        path = os.path.join(family_dir, f"{name}-{outtype}.gguf")
        convert(llama_src, spec, hf_dir, path, outtype)
        ggufs[outtype] = path

    cases = []
    for case_name, text in PLAIN_PROMPTS:
        cases.append((case_name, 0, text, tok(text)["input_ids"]))
    chat_text = tok.apply_chat_template(CHAT_PROMPT, tokenize=False, add_generation_prompt=True,
                                        date_string=DATE_STRING)
    cases.append(("chat", 1, chat_text, tok(chat_text, add_special_tokens=False)["input_ids"]))

    out = []
    notes = []
    gguf_types = {}
    for variant in ("hf", "f16", "q8_0"):
        if variant == "hf":
            vmodel = model
        else:
            vmodel = AutoModelForCausalLM.from_config(config, dtype=torch.float32,
                                                      attn_implementation="eager").eval()
            state = variant_state(gguf_mod, model, variant)
            vmodel.load_state_dict(state, strict=False)
            if config.tie_word_embeddings:
                vmodel.tie_weights()
            types, _ = check_gguf_tensors(gguf_mod, ggufs[variant], state, spec)
            gguf_types[variant] = types
        distinct = set()
        results = []
        for case_name, chat, text, ids in cases:
            limit = spec["config"].get("original_max_position_embeddings")
            if limit is not None:
                assert len(ids) + STEPS <= limit, (name, case_name, len(ids))
            window = spec["config"].get("sliding_window")
            if window:
                assert len(ids) + STEPS > 2 * window, (name, case_name)
            tokens, gaps = greedy(vmodel, ids)
            results.append((case_name, ids, tokens, gaps))
            distinct.add(len(set(tokens)))
            out.append(f"greedy {variant} {case_name} chat {chat}")
            out.append(f"text {hex_of(text)}")
            out.append("prompt_ids " + " ".join(map(str, ids)))
            out.append("tokens " + " ".join(map(str, tokens)))
            out.append("gaps " + " ".join(f"{g:.5f}" for g in gaps))
            if variant == "hf" and case_name == "story":
                seq = ids + tokens
                ablated = ablated_config(spec, config)
                if ablated is not None:
                    other = AutoModelForCausalLM.from_config(ablated, dtype=torch.float32,
                                                             attn_implementation="eager").eval()
                    state = model.state_dict()
                    if spec["arch"] == "Qwen2ForCausalLM":
                        state = {k: v * 0 if k.endswith("bias") else v for k, v in state.items()}
                    other.load_state_dict(state, strict=False)
                    if ablated.tie_word_embeddings:
                        other.tie_weights()
                    diff = float((last_logits(model, seq) - last_logits(other, seq)).abs().max())
                    notes.append(f"without the family's feature the logits move by up to {diff:.3f}")
                    assert diff > 0.5, (name, diff)
        notes.append(f"{variant}: distinct tokens per continuation {sorted(distinct)}")
        if variant != "hf":
            notes.append(llamacpp_agreement(ggufs[variant], results))
            if spec.get("llamacpp_note"):
                notes.append(spec["llamacpp_note"])
        assert min(distinct) >= 4, (name, variant, distinct)

    for text in TOKENIZE_TEXTS:
        out.append(f"tokenize {hex_of(text)}")
        out.append("ids " + " ".join(map(str, tok(text, add_special_tokens=False)["input_ids"])))
        out.append("ids_default " + " ".join(map(str, tok(text)["input_ids"])))
    for conv_name, gen, messages in CONVERSATIONS:
        out.append(f"chat {conv_name} add_generation_prompt {int(gen)}")
        for m in messages:
            out.append(f"message {m['role']} {hex_of(m['content'])}")
        try:
            rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen,
                                               date_string=DATE_STRING)
            out.append(f"rendered {hex_of(rendered)}")
            out.append("ids " + " ".join(map(str, tok(rendered, add_special_tokens=False)
                                             ["input_ids"])))
        except Exception as e:  # the template raised (e.g. Mistral has no system role)
            out.append("error")
            notes.append(f"chat {conv_name}: the template raises: {str(e)[:80]}")

    header = [
        f"# Golden data for the {name} test family (issue 14, part 6); format in "
        "tests/reference/README.md.",
        "# generator: tests/reference/make_family_models.py",
        f"# date: {datetime.date.today().isoformat()}",
        f"# transformers {transformers.__version__}, tokenizers "
        f"{importlib.metadata.version('tokenizers')}, torch {torch.__version__}",
        f"# architecture {spec['arch']}, {spec['layers']} layers, hidden 128, 4 heads over 2 KV "
        f"heads, vocab {spec['config_vocab']} (tokenizer {len(tok)}), folder dtype "
        f"{str(spec['dtype']).replace('torch.', '')}",
        f"# config rope: {json.dumps(config.rope_parameters)}",
        f"# chat templates rendered with date_string={DATE_STRING!r}",
        f"# GGUF tensor types: {json.dumps(gguf_types)}",
        f"# tokenizer cross-check: {len(mismatches)} of the texts differ from the trained "
        "tokenizer" + (f": {[m[:20] for m in mismatches[:5]]}" if mismatches else ""),
    ] + [f"# {n}" for n in notes]
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    with open(os.path.join(GOLDEN_DIR, f"{name}.txt"), "w", encoding="ascii") as f:
        f.write("\n".join(header + out) + "\n")
    sizes = {p: os.path.getsize(os.path.join(root, p)) for root, _, files in os.walk(family_dir)
             for p in files}
    print(f"{name}: {sum(sizes.values()) / 1e6:.2f} MB; " + "; ".join(notes))
    if mismatches:
        print(f"{name}: tokenizer mismatches {mismatches[:5]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("llama_src", help="llama.cpp source tree (with convert_hf_to_gguf.py)")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES))
    args = parser.parse_args()
    llama_src = os.path.abspath(args.llama_src)
    sys.path.insert(0, os.path.join(llama_src, "gguf-py"))
    import gguf as gguf_mod  # the converter's own gguf-py: its Q8_0 is the one in the files
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for name in args.family or FAMILIES:
        write_family(llama_src, name, FAMILIES[name], gguf_mod)


if __name__ == "__main__":
    main()
