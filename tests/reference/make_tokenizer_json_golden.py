#!/usr/bin/env python3
"""Trains small tokenizers with the Hugging Face `tokenizers` package, one per tokenizer.json
style staticlm reads, and writes their token ids for a tricky text set.

For each style NAME it writes tests/golden/tokenizer_json/NAME/tokenizer.json (and a
tokenizer_config.json where the style has one) and tests/golden/tokenizer_json/NAME.txt with,
per text,

    text <hex of the UTF-8 bytes>
    ids <ids, as Tokenizer.encode(text).ids gives them (post-processor included)>
    decoded <hex of Tokenizer.decode(ids, skip_special_tokens=False)>

The oracle is the `tokenizers` package alone: nothing in these files comes from staticlm.
Special tokens written in the text are recognised, as `tokenizers` always does. The C++ test
(tests/tokenizer_json_golden_test.cpp) asserts equal ids and that its decoding equals
`decoded`.

Styles (each the shape of a popular model's file, with a vocabulary trained here):
  gpt2      ByteLevel(use_regex) pre-tokenizer and decoder, <|endoftext|> (GPT-2)
  smollm    Digits(individual_digits) then ByteLevel (SmolLM2, StarCoder)
  llama3    Split(Llama 3 regex) then ByteLevel(use_regex=false), ignore_merges, BOS added
            by a TemplateProcessing post-processor, special tokens (Llama 3.x)
  qwen2     NFC normalizer, Split(Qwen2 regex) then ByteLevel, ChatML specials (Qwen2/2.5)
  spm       SentencePiece-style BPE with byte fallback: Prepend("▁") + Replace(" ", "▁")
            normalizers, Replace/ByteFallback/Fuse/Strip decoder, <s> added (Llama 2)
  metaspace SentencePiece-style BPE with byte fallback and a Metaspace pre-tokenizer
            (prepend_scheme "first"), added tokens with lstrip/rstrip (Mistral)
  metaspace_split  the same with prepend_scheme "always" and a split at every "▁"
  gemma     byte fallback with a Replace(" ", "▁") normalizer only: no space prefix (Gemma)
  added     byte-level BPE with added tokens: special and not, lstrip, rstrip, normalized
  digits    Digits(individual_digits=false) then ByteLevel (digit runs isolated whole)
  gpt4o     Split(GPT-4o's o200k regex) then ByteLevel(use_regex=false) (Phi-4-mini), with
            extra texts for its letter-case and mark classes (GPT4O_TEXTS); and
            gpt4o_pieces.txt, the pre-tokenizer's pieces of every text ('text <hex>',
            'pieces <hex> ...'), since equal ids do not show a split no merge crosses

Characters the training text lacks (jamo, U+01FA, U+0344 ...) take the byte-fallback path.
The output is deterministic: rerunning the script rewrites the same files.

Run:  python3 tests/reference/make_tokenizer_json_golden.py   (a few seconds)
"""

import importlib.metadata
import json
import os

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "tests", "golden", "tokenizer_json")

# The split patterns exactly as the models' own tokenizer.json files spell them.
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT4O_PATTERN = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])

# Training text: plain prose and code, so that merges exist for common words, numbers,
# spaces and punctuation; a little non-Latin text so some letters get tokens of their own.
CORPUS = [
    "The quick brown fox jumps over the lazy dog. It's the dog's day, isn't it?",
    "We'll see what they've done; I'm sure you'd like it. They're here!",
    "In 2024, 1,234,567 people read 3.14159 pages of 42 books in 365 days.",
    "def main():\n    for i in range(10):\n        print(i, i * 2)\n\treturn 0\n",
    "Hello world!  Hello   world!\n\nNew paragraph.\r\nWindows line.",
    "Café, naïve, résumé, über, señor, façade, coöperate, Ångström.",
    "Привет, мир! Γειά σου κόσμε. 你好，世界。 こんにちは世界。 안녕하세요",
    "Emoji: 😀 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ and symbols: © ® ™ € £ ¥ → ≠ ≤",
    "<html><body class=\"main\">a &amp; b</body></html> {\"key\": [1, 2, 3]}",
    "Mr. O'Neil said: 'Don't!' -- and then... nothing. THE END'S NEAR'LL",
] * 3

# The tricky texts: digits, runs of spaces, newlines, tabs, contractions, unicode letters,
# marks and emoji, combining characters (NFC), special tokens inside text, the empty string.
TEXTS = [
    "",
    " ",
    "Hello world",
    " Hello world",
    "Hello  world   again    ",
    "line one\nline two\n\nline four\r\nend",
    "\n\n\n",
    "tab\tseparated\t\tvalues\t",
    " \t \n \t x",
    "It's, isn't, they're, we've, I'm, we'll, he'd, IT'S, WE'LL, They'Re",
    "'s 't 're 've 'm 'll 'd 'x ''",
    "1234567890 12 123 1234 3.14159 1,000,000 2024-11-25",
    "a1b22c333d4444 x 9",
    "   42   ",
    "Café naïve résumé Ångström",
    "Cafe\u0301 nai\u0308ve A\u030angstro\u0308m",  # decomposed: NFC composes them
    "\u1100\u1161\u11a8 \u0041\u030a\u0301 \u212b \u0344",  # Hangul jamo, stacked marks
    "Привет мир Γειά σου 你好世界 こんにちは 안녕하세요",
    "😀👍🏽 👨‍👩‍👧 🇫🇷 ❤️",
    "x = f(a, b) -> {c: [1, 2]}; // done!!!",
    "$hello @world #tag %d 100%",
    "\u00a0non-breaking\u2003em-space\u3000ideographic",
    "<|endoftext|>",
    "before<|endoftext|>after",
    "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<s>hello</s> <s> world",
    "say [MASK] now and <tool>  call <tool>x",
    "  [MASK]  spaced  ",
    "< |endoftext| >",
    "The quick brown fox jumps over the lazy dog.",
]


# What the gpt-4o pattern reads beyond the other patterns: case shapes (CamelCase, all caps,
# title-case digraphs Lt, modifier letters Lm, caseless Lo), combining marks (Mn, Mc) inside,
# before and after words, contractions after upper-case words, slashes after punctuation.
GPT4O_TEXTS = [
    "HelloWorld XMLHttpRequest iPhone McDonald's camelCaseWord ALLCAPS",
    "DON'T It'S they'RE WE'LL HE'D I'M O'NEIL'S 'TIS",
    "\u01c5emal \u01c8ubljana \u01cbJ \u02b0ello a\u02b0b \u02b0",
    "e\u0301tude E\u0301TUDE \u0301alone !\u0301 x\u0903y \u0915\u093f\u0924\u093e\u092c",
    "path/to/file.txt\n/next a/b//c/\r\n/ end;/\n",
    "\u4e2d\u6587English\u6df7\u5408 \u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd",
    "\u041c\u043e\u0441\u043a\u0432\u0430MOSCOW \u03b1\u0392\u03b3\u0394 \u00dcBER \u00fcber",
    "123456 7 1234567 x12y",
    "  /  \t/\t  !!\n\n  ?",
    # An upper run holding letters of both sets with no lower run after it: the first form
    # backs off to its last such letter, so the order of the two forms shows.
    "\u4e2dA \u02b0B E\u0301X \u0301Q \u4e2d\u6587ABC x\u4e2dY",
]


def train(model, normalizer, pre_tokenizer, vocab_size, special_tokens, alphabet=None):
    tok = Tokenizer(model)
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    kwargs = dict(vocab_size=vocab_size, special_tokens=special_tokens, show_progress=False)
    if alphabet is not None:
        kwargs["initial_alphabet"] = alphabet
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(**kwargs))
    return tok


def byte_level(pre_tokenizer, specials, vocab_size=600, **model_args):
    tok = train(models.BPE(**model_args), None, pre_tokenizer, vocab_size, specials,
                alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.decoder = decoders.ByteLevel()
    return tok


def gpt2():
    return byte_level(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                      ["<|endoftext|>"]), None


def smollm():
    pre = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False)])
    return byte_level(pre, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]), None


def split_then_byte_level(pattern):
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def llama3():
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>"]
    tok = byte_level(split_then_byte_level(LLAMA3_PATTERN), specials, ignore_merges=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
              "add_bos_token": True}
    return tok, config


def qwen2():
    tok = byte_level(split_then_byte_level(QWEN2_PATTERN),
                     ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.normalizer = normalizers.NFC()
    config = {"bos_token": None, "eos_token": "<|im_end|>", "add_bos_token": False}
    return tok, config


def with_byte_fallback(tok, specials):
    """Rebuilds a trained BPE model with the 256 <0xNN> tokens after the specials, as
    SentencePiece-converted vocabularies have them, and byte_fallback on."""
    trained = json.loads(tok.to_str())["model"]
    vocab = {s: i for i, s in enumerate(specials)}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    out = Tokenizer(models.BPE(vocab=vocab, merges=merges, byte_fallback=True,
                               unk_token=specials[0], fuse_unk=True))
    out.add_special_tokens([AddedToken(s, normalized=False, special=True) for s in specials])
    return out


def sentencepiece_decoder(strip):
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if strip:
        steps.append(decoders.Strip(content=" ", left=1, right=0))
    return decoders.Sequence(steps)


def spm():
    specials = ["<unk>", "<s>", "</s>"]
    norm = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    trained = train(models.BPE(), norm, None, 500, specials)
    tok = with_byte_fallback(trained, specials)
    tok.normalizer = norm
    tok.decoder = sentencepiece_decoder(strip=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    config = {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True}
    return tok, config


def metaspace():
    specials = ["<unk>", "<s>", "</s>"]
    pre = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    trained = train(models.BPE(), None, pre, 500, specials)
    tok = with_byte_fallback(trained, specials)
    tok.pre_tokenizer = pre
    tok.decoder = sentencepiece_decoder(strip=True)
    tok.add_tokens([AddedToken("[MASK]", lstrip=True, rstrip=True, normalized=False),
                    AddedToken("<tool>", rstrip=True, normalized=False, special=False)])
    # No post-processor adds <s> here, so the config must not ask for it either.
    config = {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": False}
    return tok, config


def metaspace_split():
    specials = ["<unk>", "<s>", "</s>"]
    pre = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trained = train(models.BPE(), None, pre, 500, specials)
    tok = with_byte_fallback(trained, specials)
    tok.pre_tokenizer = pre
    tok.decoder = sentencepiece_decoder(strip=True)
    return tok, None


def gemma():
    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    norm = normalizers.Replace(" ", "▁")
    trained = train(models.BPE(), norm, None, 500, specials)
    tok = with_byte_fallback(trained, ["<unk>"] + [t for t in specials if t != "<unk>"])
    tok.normalizer = norm
    tok.decoder = sentencepiece_decoder(strip=False)
    tok.add_special_tokens([AddedToken("<start_of_turn>", normalized=False, special=True),
                            AddedToken("<end_of_turn>", normalized=False, special=True)])
    return tok, None


def added():
    tok = byte_level(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                     ["<|endoftext|>"])
    tok.add_special_tokens([AddedToken("<|im_start|>", normalized=False, special=True),
                            AddedToken("<|im_end|>", normalized=False, special=True)])
    tok.add_tokens([AddedToken("[MASK]", lstrip=True, rstrip=False, normalized=True),
                    AddedToken("<tool>", rstrip=True, normalized=False, special=False),
                    AddedToken(" world", normalized=False)])
    return tok, None


def digits():
    pre = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False)])
    return byte_level(pre, ["<|endoftext|>"]), None


def gpt4o():
    return byte_level(split_then_byte_level(GPT4O_PATTERN), ["<|endoftext|>"]), None


STYLES = {"gpt2": gpt2, "smollm": smollm, "llama3": llama3, "qwen2": qwen2, "spm": spm,
          "metaspace": metaspace, "metaspace_split": metaspace_split, "gemma": gemma,
          "added": added, "digits": digits, "gpt4o": gpt4o}
EXTRA_TEXTS = {"gpt4o": GPT4O_TEXTS}


def write_style(name, tok, config):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    tok.save(os.path.join(folder, "tokenizer.json"), pretty=False)
    if config is not None:
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump(config, f, indent=1)
            f.write("\n")
    # Read back: the golden ids come from the saved file, exactly what staticlm reads.
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    version = importlib.metadata.version("tokenizers")
    lines = [f"# {name}: tokenizers {version}, tests/reference/make_tokenizer_json_golden.py"]
    for text in TEXTS + EXTRA_TEXTS.get(name, []):
        ids = tok.encode(text).ids
        decoded = tok.decode(ids, skip_special_tokens=False)
        lines.append("text " + text.encode("utf-8").hex())
        lines.append("ids " + " ".join(str(i) for i in ids))
        lines.append("decoded " + decoded.encode("utf-8").hex())
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_pieces(name, tok):
    """The split pattern's pieces of each text, from the pre-tokenizer's offsets (code points)."""
    lines = [f"# {name}_pieces: tokenizers {importlib.metadata.version('tokenizers')}, "
             "tests/reference/make_tokenizer_json_golden.py"]
    for text in TEXTS + EXTRA_TEXTS.get(name, []):
        pieces = [text[a:b] for _, (a, b) in tok.pre_tokenizer.pre_tokenize_str(text)]
        assert "".join(pieces) == text
        lines.append("text " + text.encode("utf-8").hex())
        lines.append(" ".join(["pieces"] + [p.encode("utf-8").hex() for p in pieces]))
    with open(os.path.join(OUT, name + "_pieces.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    for name, make in STYLES.items():
        tok, config = make()
        write_style(name, tok, config)
        if name == "gpt4o":
            write_pieces(name, tok)
        print(f"{name}: {tok.get_vocab_size()} tokens")


if __name__ == "__main__":
    main()
