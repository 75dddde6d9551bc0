#!/usr/bin/env python3
"""Writes tests/golden/gemma3_tokenizer.txt: Hugging Face transformers' token ids for a
torture set of texts, with the SentencePiece vocabulary of Gemma 3 270M
(models/gemma-3-270m-q4_k_m.gguf, tokenizer.ggml.model = "llama").

The oracle is transformers alone: it rebuilds the tokenizer from the GGUF metadata
(AutoTokenizer.from_pretrained(models, gguf_file=...)). Every id in the file comes from it;
nothing comes from staticlm. For each text the file holds

    text <hex of the UTF-8 bytes>
    ids <ids, BOS first, as tokenizer(text) gives them: the file says add_bos_token = true>
    decoded <hex of tokenizer.decode(ids without BOS)>

Special tokens written in the text (e.g. "<start_of_turn>") are parsed as special tokens, as
transformers always does. The C++ test (tests/spm_tokenizer_golden_test.cpp) asserts equal
ids and that its own decoding of the ids equals `decoded`.

When llama-cpp-python is importable, the script also tokenizes every text with llama.cpp
(vocab_only) and lists the texts where the two references disagree in the header; it does
not need it.

Run:  python3 tests/reference/make_spm_tokenizer_golden.py   (about a minute on 2 cores)
"""

import datetime
import hashlib
import importlib.metadata
import os
import platform
import unicodedata

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import gguf  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL_DIR = os.path.join(REPO, "models")
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
OUT = os.path.join(REPO, "tests", "golden", "gemma3_tokenizer.txt")

LONG_PARAGRAPH = (
    "The quick brown fox jumps over the lazy dog. "
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong said: \"That's one small step for "
    "[a] man, one giant leap for mankind.\" Meanwhile, prices rose 3.75% to $1,234,567.89 "
    "(year-over-year), e-mail: someone@example.com, URL https://example.org/path?q=1&r=2#frag. "
    "Zürich, São Paulo, Kraków, Reykjavík and Ōsaka are cities; 東京 and 北京 too. "
) * 6

# Texts the references must agree on. Kept as plain Python literals, grouped by what they
# exercise; the NFD forms are built from the NFC ones below.
TEXTS = [
    # empty and plain
    "",
    "Hello",
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    # whitespace: runs, leading, trailing, tabs, newlines (Gemma has tokens for space, tab and
    # newline runs up to 31 long)
    " ",
    "  ",
    "   ",
    " leading space",
    "  two leading spaces",
    "trailing space ",
    "trailing spaces   ",
    "multiple     spaces   between words",
    "a" + " " * 31 + "b",
    "a" + " " * 32 + "b",
    "a" + " " * 45 + "b",
    "tabs\tand\t\ttabs\t",
    "\t\t\tindented",
    "\t" * 40,
    "line one\nline two\n\nline four\n",
    "\n",
    "\n" * 33,
    "\r\n windows \r\n line ends \r\n",
    " \n \n ",
    "mixed \t \n\t whitespace",
    "    def f(x):\n        return x * 2\n",
    "\u00a0no-break\u00a0space and\u3000ideographic space",
    "\u2581already a meta space\u2581\u2581",
    # digits and numbers
    "0",
    "42",
    "2024-11-25",
    "3.14159265358979323846264338327950288419716939937510",
    "123456789012345678901234567890",
    "Total:   42 items\n  7 left\n\t8 done",
    "\u0661\u0662\u0663 Arabic-Indic digits, full-width \uff11\uff12\uff13",
    # emoji, ZWJ sequences, flags, skin tones
    "\U0001F600",
    "I love \U0001F355 and \U0001F680!",
    "family: \U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
    "\U0001F3F3\ufe0f\u200d\U0001F308 \U0001F1EF\U0001F1F5 \U0001F44D\U0001F3FD",
    "\u2764\ufe0f\u200d\U0001F525",
    # CJK, Korean, mixed scripts
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
    "English, \u0420\u0443\u0441\u0441\u043a\u0438\u0439, \u0627\u0644\u0639\u0631\u0628\u064a\u0629, "
    "\u0939\u093f\u0928\u094d\u0926\u0940, \u4e2d\u6587, \ud55c\uad6d\uc5b4",
    # accents, NFC (NFD forms are added below)
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m",
    "\u1ea0\u1ea1 Vi\u1ec7t Nam",
    # byte fallback: characters the vocabulary has no token for
    "\U00020000\U0002A6D6\U0002B734",
    "\U0001FAE8\U0001FA7B",
    "\ufffd",
    "replacement \ufffd\ufffd char",
    "\ue000\uf8ff private use",
    "\U0010fffd",
    "\x00\x01\x02\x7f",
    "bell\x07 and escape\x1b[0m",
    "\u0378\u0379",
    "\U0001D11E music",
    # control and user-defined tokens written in the text
    "<start_of_turn>user\nHi<end_of_turn>",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "text <bos> in the middle",
    "<bos><bos>",
    "<eos>",
    "<pad><unk><mask>",
    "<unused0> and <unused6241>",
    "<start_of_image> picture <end_of_image>",
    "[multimodal]",
    "<start_of_turn",
    "<<start_of_turn>>",
    "<0x41> is not a byte token in text",
    "<html><body><p>Paragraph</p></body></html>",
    # code and punctuation
    "def add(a, b):\n    return a + b\n",
    "if (x != y && z >= 0) { return; }",
    "!!!???...,,,;;;",
    "I'm can't they'll we've you'd it's",
    "\"quoted\" 'single' `back` \u00abguillemets\u00bb \u201ccurly\u201d",
    "C:\\Users\\name\\file.txt",
    LONG_PARAGRAPH,
]
TEXTS += [unicodedata.normalize("NFD", t) for t in (
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m",
    "\u1ea0\u1ea1 Vi\u1ec7t Nam",
    "\ud55c\uad6d\uc5b4",
)]


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def versions():
    found = []
    for name in ["transformers", "tokenizers", "gguf", "llama-cpp-python"]:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{name} not installed")
    return f"python {platform.python_version()}, " + ", ".join(found)


def metadata(path):
    fields = gguf.GGUFReader(path).fields
    keys = ["tokenizer.ggml.model", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_space_prefix",
            "general.architecture"]
    return {k: fields[k].contents() for k in keys if k in fields}


def llama_cpp_ids(path, texts):
    """llama.cpp's ids for each text, or None when llama-cpp-python is not importable."""
    try:
        import llama_cpp
    except ImportError:
        return None
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    return [llm.tokenize(t.encode("utf-8"), add_bos=True, special=True) for t in texts]


def main():
    path = os.path.join(MODEL_DIR, MODEL_FILE)
    meta = metadata(path)
    tok = AutoTokenizer.from_pretrained(MODEL_DIR, gguf_file=MODEL_FILE)
    assert len(set(TEXTS)) == len(TEXTS), "duplicate texts"

    lines = []
    mismatched_roundtrip = []
    all_ids = []
    for text in TEXTS:
        ids = tok(text)["input_ids"]  # add_special_tokens=True: BOS, as the file asks
        assert ids[:1] == [tok.bos_token_id], f"no BOS for {text!r}"
        decoded = tok.decode(ids[1:], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if decoded != text:
            mismatched_roundtrip.append(text)
        all_ids.append(ids)
        lines.append(f"text {text.encode('utf-8').hex()}".rstrip())
        lines.append(f"ids {' '.join(str(i) for i in ids)}")
        lines.append(f"decoded {decoded.encode('utf-8').hex()}".rstrip())

    llama = llama_cpp_ids(path, TEXTS)
    if llama is None:
        llama_note = "llama.cpp cross-check: llama-cpp-python not installed, skipped"
    else:
        differ = [t for t, a, b in zip(TEXTS, all_ids, llama) if list(a) != list(b)]
        llama_note = f"texts where llama.cpp differs ({len(differ)}): " + (
            ", ".join(ascii(t[:40]) for t in differ) or "none")
        for t, a, b in zip(TEXTS, all_ids, llama):
            if list(a) != list(b):
                print(f"llama.cpp differs on {t[:40]!r}:\n  hf    {a}\n  llama {list(b)}")

    header = [
        "# gemma3_tokenizer.txt: Gemma 3 SentencePiece tokenizer ids for a torture set of texts",
        "# generator: tests/reference/make_spm_tokenizer_golden.py",
        f"# versions: {versions()}",
        f"# date: {datetime.date.today().isoformat()}",
        f"# model: models/{MODEL_FILE} sha256 {sha256_of(path)}",
        f"# metadata: {meta}",
        f"# ids source: transformers AutoTokenizer(gguf_file=...) -> {type(tok).__name__}, "
        "tokenizer(text) (BOS added), special tokens in text parsed",
        f"# texts: {len(TEXTS)}; texts whose decode differs from the text ({len(mismatched_roundtrip)}): "
        + (", ".join(ascii(t[:40]) for t in mismatched_roundtrip) or "none"),
        f"# {llama_note}",
        "# format: 'text <hex of UTF-8>', 'ids <ids>', 'decoded <hex of decode(ids[1:])>' "
        "(text and decoded bare for the empty text)",
    ]
    with open(OUT, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(header + lines) + "\n")
    print(f"wrote {OUT}: {len(TEXTS)} texts, {len(mismatched_roundtrip)} without round trip")


if __name__ == "__main__":
    main()
