#!/usr/bin/env python3
"""Goldens for config switches the tiny models do not have -- linear and YaRN RoPE scaling, Gemma
3's query_pre_attn_scalar -- from transformers (the oracle).

1. tests/golden/rope_scaling_factors.txt: the inverse frequencies and the attention factor that
   transformers' ROPE_INIT_FUNCTIONS compute for a set of configurations -- linear as Gemma 3
   4B has it, YaRN as Qwen2.5 documents it, YaRN with other betas, YaRN with mscale and
   mscale_all_dim (DeepSeek's form). Format per case:
     case <name>
     config <json of the rope parameters, head_dim, max_position_embeddings>
     params <type> <factor> <theta> <head_dim> <original context or 0> <beta_fast> <beta_slow>
     attention_factor <value>
     inv_freq <head_dim / 2 values>
2. Variants of the tiny folders of tests/models/hf/ (make_hf_folder_models.py) with one switch
   changed in config.json -- the weights, tokenizer files and everything else are symlinks to
   the unchanged folder's -- and their greedy continuations from transformers
   (tests/models/hf/greedy_<variant>.txt, the format of greedy_f16.txt, the same prompts):
     rope_linear/         llama_f16 with linear scaling, factor 4
     rope_yarn/           llama_f16 with YaRN, factor 4, original context 64, default betas
     rope_yarn_params/    llama_f16 with YaRN, factor 2, original 128, betas 8 and 0.5, and an
                          explicit attention_factor 1.25
     rope_yarn_mscale/    llama_f16 with YaRN, factor 4, original 64, mscale 1 and
                          mscale_all_dim 0.5 (the attention factor their ratio)
     rope_gemma3_linear/  gemma3_bf16 with linear scaling, factor 8, on the global layers (as
                          Gemma 3 4B-27B: the sliding layers' rotary embedding is not scaled)
     gemma3_query_scalar/ gemma3_bf16 with query_pre_attn_scalar 24 instead of its head_dim 16
                          (scores scaled by 24^-0.5, as Gemma 3 27B's by width / heads)
     phi3_partial/        the phi3 family folder (tests/models/families/phi3/hf) with
                          partial_rotary_factor 0.75 in rope_parameters, as Phi-4-mini has it:
                          RoPE turns 24 of each head's 32 elements, and its longrope factors are
                          the first 12 of the family folder's (one per turned pair)
3. GGUF copies of the unscaled files with the scaling keys llama.cpp's converter writes for
   these configs (<arch>.rope.scaling.type, .factor, .original_context_length):
   llama_f16_linear.gguf, llama_f16_yarn.gguf, gemma3_f16_linear.gguf. The tests compare their
   logits with the folders' (same values, summation order apart).
4. phi3_partial_f16.gguf: llama.cpp's own converter (convert_hf_to_gguf.py, from the
   llama-cpp-python 0.3.36 source distribution on PyPI; LLAMA_CPP_SRC names its
   vendor/llama.cpp) run on phi3_partial/: it writes phi3.rope.dimension_count 24 and the
   12-value factor tensors.

Run (a minute on 2 cores, no network):  python3 tests/reference/make_config_variants.py
Needs what make_hf_folder_models.py needs, and the gguf package (PyPI gguf 0.19).
"""

import datetime
import importlib.metadata
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_folder_models as base  # noqa: E402  (its prompts, greedy decoding and paths)
from gguf_copy import copy_keys  # noqa: E402

import gguf  # noqa: E402
import torch  # noqa: E402
from transformers import LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

REPO = base.REPO
OUT = base.OUT
GOLDEN = os.path.join(REPO, "tests", "golden")

FACTOR_CASES = [
    ("gemma3_4b_linear", 256, 131072, {"rope_type": "linear", "factor": 8.0,
                                       "rope_theta": 1000000.0}),
    ("qwen25_yarn", 128, 131072, {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1000000.0,
                                  "original_max_position_embeddings": 32768}),
    ("yarn_betas", 64, 16384, {"rope_type": "yarn", "factor": 2.0, "rope_theta": 500000.0,
                               "original_max_position_embeddings": 8192, "beta_fast": 16.0,
                               "beta_slow": 2.0}),
    ("yarn_mscale", 64, 163840, {"rope_type": "yarn", "factor": 40.0, "rope_theta": 10000.0,
                                 "original_max_position_embeddings": 4096, "mscale": 1.0,
                                 "mscale_all_dim": 0.5}),
    ("yarn_small_context", 16, 256, {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                                     "original_max_position_embeddings": 64}),
]

# variant -> (folder, source folder, source GGUF or None, config.json changes)
def rope(params):
    return {"rope_parameters": params}


VARIANTS = {
    "linear": ("rope_linear", "llama_f16", "llama_f16.gguf",
               rope({"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0})),
    "yarn": ("rope_yarn", "llama_f16", "llama_f16.gguf",
             rope({"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                   "original_max_position_embeddings": 64})),
    "yarn_params": ("rope_yarn_params", "llama_f16", None,
                    rope({"rope_type": "yarn", "factor": 2.0, "rope_theta": 10000.0,
                          "original_max_position_embeddings": 128, "beta_fast": 8.0,
                          "beta_slow": 0.5, "attention_factor": 1.25})),
    "yarn_mscale": ("rope_yarn_mscale", "llama_f16", None,
                    rope({"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                          "original_max_position_embeddings": 64, "mscale": 1.0,
                          "mscale_all_dim": 0.5})),
    "gemma3_linear": ("rope_gemma3_linear", "gemma3_bf16", "gemma3_f16.gguf",
                      rope({"full_attention": {"rope_type": "linear", "factor": 8.0,
                                               "rope_theta": 1000000.0},
                            "sliding_attention": {"rope_type": "default",
                                                  "rope_theta": 10000.0}})),
    "gemma3_query_scalar": ("gemma3_query_scalar", "gemma3_bf16", None,
                            {"query_pre_attn_scalar": 24}),
}


PHI3_FOLDER = os.path.join("..", "families", "phi3", "hf")  # relative to OUT
PHI3_PARTIAL = 0.75


def phi3_partial_changes():
    """rope_parameters of the phi3 family folder with partial_rotary_factor 0.75 and one longrope
    factor per pair RoPE then turns (transformers: int(head_dim * factor) elements)."""
    with open(os.path.join(OUT, PHI3_FOLDER, "config.json")) as f:
        config = json.load(f)
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    pairs = int(head_dim * PHI3_PARTIAL) // 2
    params = dict(config["rope_parameters"], partial_rotary_factor=PHI3_PARTIAL)
    for key in ("long_factor", "short_factor"):
        params[key] = params[key][:pairs]
    return rope(params)


VARIANTS["phi3_partial"] = ("phi3_partial", PHI3_FOLDER, None, phi3_partial_changes())


def versions():
    return ", ".join(f"{p} {importlib.metadata.version(p)}"
                     for p in ("torch", "transformers", "tokenizers", "safetensors", "gguf"))


def header(title):
    return [f"# {title}", "# generator: tests/reference/make_config_variants.py",
            f"# versions: python {sys.version.split()[0]}, {versions()}",
            f"# date: {datetime.date.today().isoformat()}"]


def write_factor_golden():
    lines = header("rope_scaling_factors.txt: transformers' RoPE inverse frequencies (float32)")
    lines.append("# format per case: 'case', 'config' (JSON), 'params' (type, factor, theta, head_dim,")
    lines.append("# original context or 0, beta_fast, beta_slow), 'attention_factor', 'inv_freq'")
    for name, head_dim, max_positions, params in FACTOR_CASES:
        config = LlamaConfig(hidden_size=head_dim * 4, num_attention_heads=4, head_dim=head_dim,
                             max_position_embeddings=max_positions,
                             rope_parameters=dict(params))
        inv_freq, attention = ROPE_INIT_FUNCTIONS[params["rope_type"]](config, "cpu")
        described = dict(params, head_dim=head_dim, max_position_embeddings=max_positions)
        resolved = [params["rope_type"], params["factor"], params["rope_theta"], head_dim,
                    params.get("original_max_position_embeddings", 0),
                    params.get("beta_fast", 32.0), params.get("beta_slow", 1.0)]
        lines += [f"case {name}", "config " + json.dumps(described, sort_keys=True),
                  "params " + " ".join(str(v) for v in resolved),
                  f"attention_factor {float(attention):.9g}",
                  "inv_freq " + " ".join(f"{float(v):.9e}" for v in inv_freq)]
    with open(os.path.join(GOLDEN, "rope_scaling_factors.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def make_folder(name, source, changes):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    source_dir = os.path.join(OUT, source)
    for name in sorted(os.listdir(source_dir)):
        if name == "config.json":
            continue
        link = os.path.join(folder, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join("..", source, name), link)
    with open(os.path.join(source_dir, "config.json")) as f:
        config = json.load(f)
    config.update(changes)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    return folder


def write_scaled_gguf(source, dest, params):
    """A copy of `source` with the scaling keys convert_hf_to_gguf.py writes for `params`."""
    params = params["rope_parameters"]
    scaling = params.get("full_attention", params)
    reader = gguf.GGUFReader(os.path.join(OUT, source))
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(os.path.join(OUT, dest), arch=arch)
    copy_keys(reader, writer)
    writer.add_rope_scaling_type(gguf.RopeScalingType(scaling["rope_type"]))
    writer.add_rope_scaling_factor(scaling["factor"])
    if "original_max_position_embeddings" in scaling:
        writer.add_rope_scaling_orig_ctx_len(scaling["original_max_position_embeddings"])
    for t in reader.tensors:
        writer.add_tensor(t.name, t.data, raw_shape=list(reversed([int(d) for d in t.shape])),
                          raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    torch.set_num_threads(1)
    write_factor_golden()
    for variant, (name, source, source_gguf, changes) in VARIANTS.items():
        folder = make_folder(name, source, changes)
        base.write_golden(folder, variant, generator="tests/reference/make_config_variants.py")
        if source_gguf is not None:
            stem = source_gguf[:-len(".gguf")]
            write_scaled_gguf(source_gguf, f"{stem}_{variant.split('_')[-1]}.gguf", changes)
    convert_in_subprocess("phi3_partial", "phi3_partial_f16.gguf")


def convert_in_subprocess(folder, gguf_name):
    """make_hf_folder_models.convert in a fresh interpreter: the converter needs llama.cpp's own
    gguf-py, which this process's `import gguf` (PyPI's) would shadow."""
    code = ("import make_hf_folder_models as b; "
            f"b.convert({os.path.join(OUT, folder)!r}, {os.path.join(OUT, gguf_name)!r}, 'f16')")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    main()
