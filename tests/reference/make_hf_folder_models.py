#!/usr/bin/env python3
"""Writes the tiny Hugging Face folders of tests/models/hf/ and their goldens.

One random-weight Llama-family model (SmolLM2's shape in miniature: tied embeddings, grouped
query attention, SiLU FFN, a byte-level BPE vocabulary with SmolLM2's digit split) made with
transformers from a fixed seed, saved as Hugging Face folders in the layouts staticlm must
read:

  llama_f32/        model.safetensors, F32
  llama_f16/        model.safetensors, F16 (the F32 weights rounded by torch)
  llama_bf16/       model.safetensors, BF16
  llama_sharded/    the F32 weights in two shards with model.safetensors.index.json
  gemma3_bf16/      a Gemma 3 (text) model, BF16: six layers, every sixth global, a window of 8

and, with llama.cpp's own converter (convert_hf_to_gguf.py; its RoPE permutation of q and k
included), llama_f16.gguf (from llama_f16/, so both hold the same F16 values) and
llama_q8_0.gguf (from llama_f32/, the converter's Q8_0 quantization), gemma3_f16.gguf (from
gemma3_bf16/; the converter adds Gemma's 1 to the norms); the converter has no Q4_0
output, so llama_q4_0.gguf is its F32 conversion with every matrix quantized by gguf-py.

Goldens (tests/models/hf/greedy_<variant>.txt, the format of tests/golden/greedy.txt): for
each folder, transformers (float32 compute, eager attention, one thread) loads it, upcasting
the stored values exactly, and decodes greedily from fixed prompts of token ids. staticlm is
tested through ids, so no tokenizer is needed at run time; the folders still carry one
(trained here with the `tokenizers` package) because the converter and the tokenizer.json
loader need it.

The converter cannot identify a freshly trained vocabulary's pre-tokenizer by its hash, so it
is told the family's: "smollm" (SmolLM2's digit split before the GPT-2 regex).

Run:  python3 tests/reference/make_hf_folder_models.py
"""

import copy
import datetime
import importlib.metadata
import json
import os
import runpy
import shutil
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import (AutoModelForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig,  # noqa: E402
                          LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "tests", "models", "hf")
LLAMA_CPP = os.environ.get("LLAMA_CPP_SRC", "/work/llama-src/llama.cpp")
SEED = 1234
VOCAB = 384
STEPS = 24
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    "The quick brown fox jumps over the lazy dog. 0123456789",
    "Hello, world! How are you today? I am fine, thank you.",
    "Small models are easy to test: 12 layers, 64 heads, 3.14159.",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n",
] * 20
# More text for the trainer to find enough merges in (fixed, so the vocabulary is too).
MORE_TEXT = """Hugging Face folders hold config.json, tokenizer files and safetensors shards.
llama.cpp converts them to GGUF; staticlm reads them as they are published, mapped read-only.
Every hyperparameter is validated: a missing or malformed field names the file and the key.
Quantization at init writes Q8_0 or Q4_0 blocks into the weight buffer, nothing after init.
Rotary position embeddings rotate halves in transformers and adjacent pairs after permutation.
Grouped-query attention shares key and value heads; the feed-forward network gates with SiLU.
Seventeen, twenty-three, forty-two and one hundred and one are numbers; so are 7, 23 and 101."""
# Prompts of token ids (the tests run through ids). Ids 0-2 are the special tokens.
PROMPTS = {
    "short": [1, 40, 41, 42],
    "medium": [1, 100, 7, 250, 33, 19, 301, 5, 77, 120, 8, 64],
    "long": [1] + [(17 * i + 11) % (VOCAB - 3) + 3 for i in range(40)],
}


def train_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True),
         pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS + MORE_TEXT.split("\n"), trainer=trainer)
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>",
                                   eos_token="<|im_end|>", unk_token="<|endoftext|>")


def make_model():
    torch.manual_seed(SEED)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=192,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
                         tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
                         initializer_range=0.25, attn_implementation="eager")
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # norms away from 1, so a wrong norm weight shows in the logits
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
    return model


def make_gemma3():
    """Gemma 3 (text) in miniature: six layers, every sixth global, an 8-token window."""
    torch.manual_seed(SEED + 1)
    config = Gemma3TextConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                              num_hidden_layers=6, num_attention_heads=4, num_key_value_heads=2,
                              head_dim=16, query_pre_attn_scalar=16, sliding_window=8,
                              max_position_embeddings=256, rms_norm_eps=1e-6,
                              bos_token_id=1, eos_token_id=2, pad_token_id=0,
                              initializer_range=0.25, attn_implementation="eager")
    model = Gemma3ForCausalLM(config).eval()
    with torch.no_grad():  # Gemma's norms are 1 + w: w away from 0
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(0.2 * torch.randn_like(p))
    return model


def save(model, tokenizer, name, dtype, shard=None):
    path = os.path.join(OUT, name)
    shutil.rmtree(path, ignore_errors=True)
    m = copy.deepcopy(model).to(dtype)
    kwargs = {"max_shard_size": shard} if shard else {}
    m.save_pretrained(path, safe_serialization=True, **kwargs)
    tokenizer.save_pretrained(path)
    for f in ("generation_config.json",):
        if os.path.exists(os.path.join(path, f)):
            os.remove(os.path.join(path, f))
    return path


def greedy(model, ids):
    tokens, gaps, top1 = [], [], []
    with torch.no_grad():
        out = model(torch.tensor([ids]), use_cache=True)
        for _ in range(STEPS):
            logits = out.logits[0, -1].double()
            top = torch.topk(logits, 2)
            nxt = int(torch.argmax(logits))  # lowest id wins ties
            tokens.append(nxt)
            gaps.append(float(top.values[0] - top.values[1]))
            top1.append(float(top.values[0]))
            out = model(torch.tensor([[nxt]]), past_key_values=out.past_key_values, use_cache=True)
    return tokens, gaps, top1


def write_golden(folder, variant, generator="tests/reference/make_hf_folder_models.py"):
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    versions = ", ".join(f"{p} {importlib.metadata.version(p)}"
                         for p in ("torch", "transformers", "tokenizers", "safetensors"))
    lines = [
        f"# greedy_{variant}.txt: {STEPS}-token greedy continuations (transformers, f32 compute)",
        f"# generator: {generator}",
        f"# versions: python {sys.version.split()[0]}, {versions}",
        f"# date: {datetime.date.today().isoformat()}",
        f"# model: tests/models/hf/{os.path.basename(folder)} (stored values upcast to f32)",
        "# decoding: full forward over the prompt, then one token per step with the KV cache;",
        "# argmax (lowest id wins ties), EOS ignored.",
        "# format per case: 'case <name> chat 0', 'text <hex>', 'prompt_ids', 'tokens', 'gaps',"
        " 'top1'",
    ]
    for name, ids in PROMPTS.items():
        tokens, gaps, top1 = greedy(model, ids)
        lines += [f"case {name} chat 0", "text ", "prompt_ids " + " ".join(map(str, ids)),
                  "tokens " + " ".join(map(str, tokens)),
                  "gaps " + " ".join(f"{g:.6f}" for g in gaps),
                  "top1 " + " ".join(f"{t:.6f}" for t in top1)]
    with open(os.path.join(OUT, f"greedy_{variant}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def convert(folder, outfile, outtype):
    """llama.cpp's converter, in this process so it can be told the pre-tokenizer."""
    sys.path.insert(0, LLAMA_CPP)
    sys.path.insert(0, os.path.join(LLAMA_CPP, "gguf-py"))
    from conversion import base  # noqa: E402  (llama.cpp's converter package)
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "smollm"
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", folder, "--outfile", outfile, "--outtype", outtype]
    try:
        runpy.run_path(os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py"), run_name="__main__")
    finally:
        sys.argv = argv


def requantize(src, dst, qtype):
    """A copy of the GGUF `src` with every matrix quantized to `qtype` by the gguf package
    (gguf-py's quantizers match ggml's reference bit for bit); the rest as it is."""
    import gguf  # noqa: E402  (llama.cpp's gguf-py, on the path once convert() ran)
    import numpy as np  # noqa: E402
    from gguf_copy import copy_keys  # noqa: E402  (after convert(): the same gguf-py)
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, arch=reader.fields["general.architecture"].contents())
    copy_keys(reader, writer)
    for t in reader.tensors:
        shape = [int(d) for d in reversed(t.shape)]
        data = np.asarray(t.data, dtype=np.float32).reshape(shape)
        if len(shape) == 2 and shape[-1] % 32 == 0:
            writer.add_tensor(t.name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(t.name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    tokenizer = train_tokenizer()
    model = make_model()
    f32 = save(model, tokenizer, "llama_f32", torch.float32)
    f16 = save(model, tokenizer, "llama_f16", torch.float16)
    save(model, tokenizer, "llama_bf16", torch.bfloat16)
    sharded = save(model, tokenizer, "llama_sharded", torch.float32, shard="300KB")
    index = os.path.join(sharded, "model.safetensors.index.json")
    shards = sorted(set(json.load(open(index))["weight_map"].values()))
    assert len(shards) == 2, shards
    gemma3 = save(make_gemma3(), tokenizer, "gemma3_bf16", torch.bfloat16)
    for variant in ("f32", "f16", "bf16"):
        write_golden(os.path.join(OUT, f"llama_{variant}"), variant)
    write_golden(gemma3, "gemma3")
    convert(f16, os.path.join(OUT, "llama_f16.gguf"), "f16")
    convert(f32, os.path.join(OUT, "llama_q8_0.gguf"), "q8_0")
    convert(gemma3, os.path.join(OUT, "gemma3_f16.gguf"), "f16")
    f32_gguf = os.path.join(OUT, "llama_f32.tmp.gguf")
    convert(f32, f32_gguf, "f32")
    import gguf  # noqa: E402
    requantize(f32_gguf, os.path.join(OUT, "llama_q4_0.gguf"), gguf.GGMLQuantizationType.Q4_0)
    os.remove(f32_gguf)


if __name__ == "__main__":
    main()
