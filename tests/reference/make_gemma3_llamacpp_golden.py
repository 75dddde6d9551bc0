#!/usr/bin/env python3
"""Writes tests/golden/gemma3_llamacpp_greedy.txt: Gemma 3 270M's greedy continuations by llama.cpp.

The second oracle for Gemma 3 (issue 13, part 5), beside transformers
(tests/golden/gemma3_greedy.txt, make_gemma3_greedy_golden.py). The prompts
are that file's eight cases, with its ids (transformers' tokenizer, BOS
first), so both oracles and staticlm see the same ids and only the model is
compared. llama.cpp (llama-cpp-python) runs models/gemma-3-270m-q4_k_m.gguf
as it is: its matrix products quantize the activations to 8 bits (Q8_K for
the K-quant weights, Q8_0/Q8_1 for the others) and its KV cache is f16.
Greedy decoding is this script's own loop: the prompt in one `eval` (batches
of 512), then one token per step; argmax of the last logits (lowest id among
equal maxima) for exactly 32 tokens, EOS ignored. Per step it records the
token, llama.cpp's top-1 minus top-2 logit gap and its top-1 logit.

How far llama.cpp's quantized arithmetic moves its logits is measured, not
assumed: the same file dequantized to f32 (gguf's own dequantize) runs in
llama.cpp with an f32 KV cache, in lock-step on the same tokens (no
activation quantization: the computation transformers and staticlm do). At
each step `deviation` is the largest |quantized − f32| logit difference over
the candidates that matter: every token whose quantized logit is within
CANDIDATE_WINDOW of the top. A runtime computing the f32 logits can pick a
different token than llama.cpp only where llama.cpp's gap is below
2 × deviation (the two candidates move by at most that much in opposite
directions); tests/gemma3_llamacpp_golden_test.cpp excuses a divergence only
there (plus its own 0.1 allowance) and stops comparing that case.

The f32 run is also checked against transformers: on transformers' own path
its greedy tokens and top-1 logits must equal gemma3_greedy.txt's (up to
near ties), which shows that llama.cpp and transformers implement the same
model, window included, and that the deviations come from quantization.

Needs llama-cpp-python (without it the script prints why and exits 0),
gguf and numpy; about 1.1 GB of temporary disk for the f32 file. Takes 5 to
10 minutes on 2 cores.

Run:  python3 tests/reference/make_gemma3_llamacpp_golden.py [--f32 PATH]
"""

import argparse
import datetime
import importlib.metadata
import os
import platform
import sys
import tempfile

import numpy as np

from gguf_copy import sha256_of, write_f32_gguf

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(REPO, "models", "gemma-3-270m-q4_k_m.gguf")
TRANSFORMERS_GOLDEN = os.path.join(REPO, "tests", "golden", "gemma3_greedy.txt")
GOLDEN = os.path.join(REPO, "tests", "golden", "gemma3_llamacpp_greedy.txt")
STEPS = 32
# One thread: immune to OpenMP spin-waiting when the machine is oversubscribed (two threads
# ran more than ten times slower while others were compiling); a row of a product is summed by
# one thread either way.
THREADS = 1
N_CTX = 2048  # the longest prompt (about 1,400 ids) plus 32 steps
N_BATCH = 512
# Tokens whose quantized logit is this close to the top are the candidates a different
# arithmetic could promote; the deviation is measured over them. Wider than any deviation seen.
CANDIDATE_WINDOW = 4.0
# The f32 run must reproduce transformers' top-1 logits this closely. Not bit-level: even on f32
# tensors ggml's CPU GELU rounds its input to f16 and reads a table (GGML_GELU_FP16 in
# ggml-cpu/vec.h), which moved Gemma's logits by up to about 0.02 here; a wrong model (window,
# RoPE base, a norm) moves them by whole units.
F32_TOP1_LIMIT = 0.05


def versions():
    names = ["llama-cpp-python", "gguf", "numpy"]
    return f"python {platform.python_version()}, " + ", ".join(
        f"{n} {importlib.metadata.version(n)}" for n in names)


def read_cases(path):
    """The cases of gemma3_greedy.txt: dicts with name, text_hex, ids, tokens, gaps, top1."""
    cases = []
    with open(path, encoding="ascii") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            key, _, payload = line.rstrip("\n").partition(" ")
            if key == "case":
                cases.append({"name": payload.split()[0]})
            elif key == "text":
                cases[-1]["text_hex"] = payload
            elif key in ("prompt_ids", "tokens"):
                cases[-1]["ids" if key == "prompt_ids" else key] = [int(x) for x in payload.split()]
            elif key in ("gaps", "top1"):
                cases[-1][key] = [float(x) for x in payload.split()]
    return cases


# ---------------------------------------------------------------- llama.cpp


def load(path, f32_kv=False):
    from llama_cpp import GGML_TYPE_F32, Llama  # pylint: disable=import-outside-toplevel

    kv = {"type_k": GGML_TYPE_F32, "type_v": GGML_TYPE_F32} if f32_kv else {}
    return Llama(model_path=path, n_ctx=N_CTX, n_batch=N_BATCH, n_threads=THREADS,
                 n_threads_batch=THREADS, seed=0, logits_all=False, verbose=False, **kv)


def last_logits(llm):
    """The last evaluated token's logits (llama-cpp-python keeps no copy without logits_all)."""
    import llama_cpp  # pylint: disable=import-outside-toplevel

    row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)  # pylint: disable=protected-access
    return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).copy()


def top2(logits):
    """(argmax with the lowest id among equal maxima, top-1 minus top-2 gap, top-1 value)."""
    token = int(np.argmax(logits))
    rest = np.delete(logits, token)
    return token, float(logits[token] - rest.max()), float(logits[token])


def deviation(quantized, exact):
    """Largest |quantized - exact| over the tokens within CANDIDATE_WINDOW of the quantized top."""
    candidates = quantized >= quantized.max() - CANDIDATE_WINDOW
    return float(np.abs(quantized[candidates] - exact[candidates]).max())


def lockstep(quantized, exact, ids):
    """STEPS greedy steps of `quantized`, the `exact` model fed the same tokens.

    Per step: the quantized model's token, gap and top-1, and the deviation between the two."""
    quantized.reset()
    exact.reset()
    quantized.eval(ids)
    exact.eval(ids)
    steps = []
    for step in range(STEPS):
        q, x = last_logits(quantized), last_logits(exact)
        token, gap, top1 = top2(q)
        steps.append({"token": token, "gap": gap, "top1": top1, "deviation": deviation(q, x),
                      "max_abs_diff": float(np.abs(q - x).max())})
        if step + 1 < STEPS:
            quantized.eval([token])
            exact.eval([token])
    return steps


def on_path(llm, ids, tokens):
    """Fed `tokens` after `ids`: per step, the model's own argmax and its logit of the token."""
    llm.reset()
    llm.eval(ids)
    steps = []
    for step, token in enumerate(tokens):
        logits = last_logits(llm)
        steps.append({"argmax": int(np.argmax(logits)), "logit": float(logits[token])})
        if step + 1 < len(tokens):
            llm.eval([token])
    return steps


# ---------------------------------------------------------------- checks


def check_f32_against_transformers(case, steps):
    """(first step where the f32 run's own choice differs, max |top-1 difference| before it).

    Exits when the f32 run departs from transformers anywhere but at a near tie."""
    first, worst = STEPS, 0.0
    for i, s in enumerate(steps):
        if s["argmax"] != case["tokens"][i]:
            if case["gaps"][i] >= 0.1:
                sys.exit(f"{case['name']} step {i}: llama.cpp f32 picks {s['argmax']}, "
                         f"transformers {case['tokens'][i]} with a gap of {case['gaps'][i]}")
            first = i
            break
        worst = max(worst, abs(s["logit"] - case["top1"][i]))
    if worst > F32_TOP1_LIMIT:
        sys.exit(f"{case['name']}: llama.cpp f32 top-1 logits differ from transformers' by {worst}")
    return first, worst


def first_divergence(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), STEPS)


def llama_build_info():
    import llama_cpp  # pylint: disable=import-outside-toplevel

    info = llama_cpp.llama_print_system_info().decode().strip()
    return llama_cpp.__version__, info


# ---------------------------------------------------------------- main


def run_cases(cases, quantized, exact):
    results = []
    for case in cases:
        own = lockstep(quantized, exact, case["ids"])
        on_transformers_path = on_path(exact, case["ids"], case["tokens"])
        f32_first, f32_worst = check_f32_against_transformers(case, on_transformers_path)
        tokens = [s["token"] for s in own]
        results.append({"case": case, "steps": own, "f32_first": f32_first,
                        "f32_worst": f32_worst,
                        "vs_transformers": first_divergence(tokens, case["tokens"])})
        print(f"{case['name']}: {len(case['ids'])} prompt ids; tokens equal to transformers' "
              f"for {results[-1]['vs_transformers']} steps; max deviation "
              f"{max(s['deviation'] for s in own):.4f}", flush=True)
    return results


def header(results, version, info):
    devs = [s["deviation"] for r in results for s in r["steps"]]
    vocab_devs = [s["max_abs_diff"] for r in results for s in r["steps"]]
    gaps = [s["gap"] for r in results for s in r["steps"]]
    excusable = sum(s["gap"] < 2 * s["deviation"] + 0.1 for r in results for s in r["steps"])
    lines = [
        f"gemma3_llamacpp_greedy.txt: {STEPS}-token greedy continuations of Gemma 3 270M (llama.cpp)",
        "generator: tests/reference/make_gemma3_llamacpp_golden.py",
        f"versions: {versions()}",
        f"llama.cpp: llama-cpp-python {version}; llama_print_system_info: {info}",
        f"date: {datetime.date.today().isoformat()}",
        f"model: models/{os.path.basename(MODEL)} sha256 {sha256_of(MODEL)}",
        "prompts: the cases of gemma3_greedy.txt with its (transformers') ids.",
        f"llama.cpp: the file as is (8-bit activations in the matmuls), f16 KV cache, n_ctx {N_CTX},",
        f"n_batch {N_BATCH}, threads {THREADS}; prompt in one eval, then one token per step; argmax,",
        f"exactly {STEPS} tokens, EOS ignored.",
        "deviation: per step, max |quantized - f32| logit over the tokens within "
        f"{CANDIDATE_WINDOW:g} of the top, where",
        "f32 = llama.cpp on the file dequantized to f32 with an f32 KV cache, fed the same tokens.",
        f"  observed: median {np.median(devs):.4f}, max {max(devs):.4f} (over the whole vocabulary: "
        f"max {max(vocab_devs):.4f});",
        f"  llama.cpp's top-2 gaps: min {min(gaps):.6f}, median {np.median(gaps):.4f};",
        f"  steps where gap < 2 x deviation + 0.1 (a divergence there is excused): "
        f"{excusable}/{len(gaps)}.",
        "f32 run vs transformers (gemma3_greedy.txt) on transformers' path: greedy tokens equal up to",
        "the first near tie (gap < 0.1), top-1 logits before it within "
        f"{max(r['f32_worst'] for r in results):.6f}.",
        "per case: first step where llama.cpp's tokens differ from transformers' (with llama.cpp's gap",
        "there and the near-tie limit 0.1 + 2 x deviation) | the f32 run's first near tie (32: none):",
    ]
    for r in results:
        at, where = r["vs_transformers"], ""
        if at < STEPS:
            step = r["steps"][at]
            where = f" (gap {step['gap']:.4f}, limit {0.1 + 2 * step['deviation']:.4f})"
        lines.append(f"  {r['case']['name']}: {at}{where} | {r['f32_first']}")
    lines.append("format per case: 'case <name> chat 0', 'text <hex>', 'prompt_ids', 'tokens', 'gaps', "
                 "'top1', 'deviation'")
    return ["# " + line for line in lines]


def body(results):
    lines = []
    for r in results:
        case, steps = r["case"], r["steps"]
        lines += [f"case {case['name']} chat 0", f"text {case['text_hex']}",
                  "prompt_ids " + " ".join(map(str, case["ids"])),
                  "tokens " + " ".join(str(s["token"]) for s in steps),
                  "gaps " + " ".join(f"{s['gap']:.6f}" for s in steps),
                  "top1 " + " ".join(f"{s['top1']:.6f}" for s in steps),
                  "deviation " + " ".join(f"{s['deviation']:.6f}" for s in steps)]
    return lines


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--f32", metavar="PATH",
                        help="keep the f32 copy of the model here (made when absent, reused "
                             "when present: making it takes minutes); default: a temporary file")
    return parser.parse_args()


def main():
    try:
        import llama_cpp  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError as e:
        print(f"skipped: llama_cpp is not installed ({e}); pip install -r tests/reference/requirements.txt")
        return 0
    if not os.path.exists(MODEL):
        print(f"skipped: {MODEL} is absent (scripts/fetch-model gemma3-270m fetches it)")
        return 0
    args = parse_args()
    cases = read_cases(TRANSFORMERS_GOLDEN)
    version, info = llama_build_info()
    print(f"llama-cpp-python {version}: {info}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        f32_path = args.f32 or os.path.join(tmp, "gemma3-f32.gguf")
        if not os.path.exists(f32_path):
            write_f32_gguf(MODEL, f32_path)
        quantized, exact = load(MODEL), load(f32_path, f32_kv=True)
        try:
            results = run_cases(cases, quantized, exact)
        finally:
            quantized.close()
            exact.close()
    with open(GOLDEN, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(header(results, version, info) + body(results)) + "\n")
    print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
