"""Model.bench(): the figures of `staticlm bench --json` that a loaded model can measure, under
the same key names (bench/README.md): time to first token, prefill and decode speed, per-token
decode latency, synchronisation time and the bytes a decode step reads. Decode is measured at
one depth, right after the prompt (depth = prompt_tokens); "decode_tokens_per_s" repeats its
figure at the top level. Timed around the C calls from Python, so
each figure includes a few microseconds of ctypes overhead per call."""

import ctypes
import statistics
import time

from ._capi import Sampler, StepCost, lib

_PROMPT_TEXT = ("The history of science is the study of the development of science and "
                "scientific knowledge, including both the natural and social sciences. ")


def _prompt(model, n_tokens):
    """n_tokens ids: a fixed English text, tokenized and repeated (as the CLI's bench)."""
    base = model.tokenize(_PROMPT_TEXT)
    return (base * (n_tokens // len(base) + 1))[:n_tokens]


def _one_rep(model, tokens, gen_tokens, sampler):
    model.reset()
    token = ctypes.c_int32()
    start = time.perf_counter()
    model.prefill(tokens)
    prefill_s = time.perf_counter() - start
    model._check(lib.staticlm_sample(model._ctx, ctypes.byref(sampler), ctypes.byref(token)))
    ttft_s = time.perf_counter() - start
    latencies = []
    lib.staticlm_reset_sync_seconds(model._ctx)
    for _ in range(gen_tokens):
        step = time.perf_counter()
        model.decode(token.value)
        model._check(lib.staticlm_sample(model._ctx, ctypes.byref(sampler),
                                         ctypes.byref(token)))
        latencies.append(time.perf_counter() - step)
    return prefill_s, ttft_s, latencies, lib.staticlm_sync_seconds(model._ctx)


def _summary(values_ms):
    ordered = sorted(values_ms)

    def pick(q):
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"min": ordered[0], "p50": statistics.median(ordered), "p90": pick(0.90),
            "p99": pick(0.99), "max": ordered[-1], "mean": statistics.fmean(ordered),
            "stdev": statistics.pstdev(ordered), "count": len(ordered)}


def run_bench(model, prompt_tokens, gen_tokens, reps):
    if prompt_tokens < 1 or gen_tokens < 1 or reps < 1:
        raise ValueError("prompt_tokens, gen_tokens and reps must be at least 1")
    if prompt_tokens + gen_tokens > model.limits.max_context:
        raise ValueError("prompt_tokens + gen_tokens exceed the model's ctx")
    tokens = _prompt(model, prompt_tokens)
    greedy = Sampler()
    lib.staticlm_sampler_default(ctypes.byref(greedy))
    greedy.temperature = 0.0
    _one_rep(model, tokens, gen_tokens, greedy)  # warm-up, not recorded
    runs = [_one_rep(model, tokens, gen_tokens, greedy) for _ in range(reps)]
    model.reset()
    latencies_ms = [s * 1e3 for _, _, steps, _ in runs for s in steps]
    decode_tps = [gen_tokens / sum(steps) for _, _, steps, _ in runs]
    prefill_tps = [prompt_tokens / prefill_s for prefill_s, _, _, _ in runs]
    ttft_ms = [ttft_s * 1e3 for _, ttft_s, _, _ in runs]
    sync_ms = [sync_s * 1e3 / gen_tokens for _, _, _, sync_s in runs]
    cost = StepCost()
    lib.staticlm_step_cost_get(model._ctx, 1, prompt_tokens, ctypes.byref(cost))
    depth = str(prompt_tokens)
    return {
        "staticlm_version": lib.staticlm_version().decode(),
        "backend": model.backend,
        "backend_description": lib.staticlm_backend_description(model._ctx).decode(),
        "threads": model.limits.threads,
        "config": {"model": model.path, "prompt_tokens": prompt_tokens,
                   "gen_tokens": gen_tokens, "depths": [prompt_tokens], "reps": reps,
                   "warmup": 1, "ctx": model.limits.max_context, "sampler": "greedy"},
        "ttft_ms": statistics.median(ttft_ms),
        "ttft_ms_best": min(ttft_ms),
        "prefill_tokens_per_s": statistics.median(prefill_tps),
        "prefill_tokens_per_s_best": max(prefill_tps),
        "decode_tokens_per_s": statistics.median(decode_tps),
        "decode_tokens_per_s_by_depth": {depth: statistics.median(decode_tps)},
        "decode_tokens_per_s_best_by_depth": {depth: max(decode_tps)},
        "decode_latency_ms": _summary(latencies_ms),
        "bytes_read_per_decode_step": {depth: cost.bytes_read},
        "sync_ms_per_token": statistics.median(sync_ms),
        "planned_bytes": model.memory()["total_bytes"],
        "memory": model.memory(),
        "reps": [{"ttft_ms": t, "prefill_tokens_per_s": p, "sync_ms_per_token": y,
                  "decode_tokens_per_s_by_depth": {depth: d}}
                 for t, p, d, y in zip(ttft_ms, prefill_tps, decode_tps, sync_ms)],
    }
