"""Part 1: staticlm vs llama.cpp on prefill and decode speed, sides alternating round by round.

A round is every figure once on one side. Rounds go staticlm, llama.cpp, staticlm, llama.cpp …
so a burst of machine noise lasting seconds lands on one or two samples of each side rather
than on all samples of one side.

staticlm: `staticlm bench` takes one prompt length per invocation, so a round is one invocation
per prefill size plus one for the decode depths above 0 (see _staticlm_round).
llama.cpp: one Llama object for the whole part (created and warmed up once), every figure per
round.
"""

import os
import sys
import time

from compare_lib import bound as bandwidth_bound
from compare_lib.llamacpp_side import LlamaCpp
from compare_lib.stats import paired_ratios, ratios, summarize


def _figure(key, label, unit, higher, ours, peer, note=None):
    s_ours = summarize(ours, higher)
    s_peer = summarize(peer, higher)
    return {"key": key, "label": label, "unit": unit, "higher_is_better": higher,
            "staticlm": ours, "peer": peer, "staticlm_summary": s_ours, "peer_summary": s_peer,
            "ratio": ratios(s_ours, s_peer),
            "paired": paired_ratios(ours, peer) if len(ours) == len(peer) else None,
            "note": note}


def _staticlm_round(staticlm, cfg):
    """One `staticlm bench` per prefill size (with a warm-up rep; the first one also times
    decode at depth 0), then one for the deeper depths without a warm-up rep: its untimed
    prefill of `depth` tokens right before the timed steps warms the decode path, and a
    warm-up rep would double the longest part of the round."""
    gen, depths = cfg["gen_tokens"], cfg["depths"]
    prefill = []
    for i, size in enumerate(cfg["prefill_sizes"]):
        timed_depth0 = i == 0 and 0 in depths
        prefill.append(staticlm.bench(size, [0], gen if timed_depth0 else 1, warmup=1))
    deep_depths = [d for d in depths if d > 0]
    deep = staticlm.bench(1, deep_depths, gen, warmup=0) if deep_depths else None
    return {"prefill": prefill, "deep": deep}


def _staticlm_decode(sample, depth):
    inv = sample["prefill"][0] if depth == 0 else sample["deep"]
    return inv["decode_tokens_per_s_by_depth"].get(depth)


def _invocations(sample):
    return sample["prefill"] + ([sample["deep"]] if sample["deep"] else [])


def figures(raw_ours, raw_peer, llama_init_ms, cfg):
    sizes, depths = cfg["prefill_sizes"], cfg["depths"]
    out = []
    for i, size in enumerate(sizes):
        out.append(_figure(
            "prefill_%d" % size, "prefill %d tokens" % size, "tok/s", True,
            [r["prefill"][i]["prefill_tokens_per_s"] for r in raw_ours],
            [r["prefill_tokens_per_s_by_size"][size] for r in raw_peer]))
    for depth in depths:
        out.append(_figure(
            "decode_depth_%d" % depth, "decode at depth %d (%d tokens)" % (depth,
                                                                          cfg["gen_tokens"]),
            "tok/s", True,
            [_staticlm_decode(r, depth) for r in raw_ours],
            [r["decode_tokens_per_s_by_depth"][depth] for r in raw_peer]))
    out.append(_figure(
        "ttft_%d" % sizes[0], "time to first token, %d-token prompt" % sizes[0], "ms", False,
        [r["prefill"][0]["ttft_ms"] for r in raw_ours],
        [r["ttft_ms"] for r in raw_peer]))
    out.append(_figure(
        "init_ms", "init (load + prepare)", "ms", False,
        [inv["init_ms"] for r in raw_ours for inv in _invocations(r)], [llama_init_ms],
        note="staticlm: staticlm_create in every invocation; llama.cpp: the Llama() "
             "constructor, once (includes llama-cpp-python's Python set-up)"))
    return out


def _probe_bandwidth(staticlm, log):
    """One `staticlm bench` with its read-bandwidth probe -> (bytes/s, staticlm's bytes/step)."""
    sample = staticlm.bench(1, [0], 1, warmup=0, probe=True)
    bandwidth = sample["read_bandwidth_bytes_per_s"]
    print("[compare] read bandwidth probe: %s GB/s" % (
        "%.1f" % (bandwidth / 1e9) if bandwidth else "?"), file=log, flush=True)
    return bandwidth, sample["bytes_read_per_decode_step"]


def _bandwidth_bound(model, probes, figs, cfg):
    """The bound section of the part (compare_lib/bound.py), or why there is none."""
    medians = {}
    for f in figs:
        if f["key"].startswith("decode_depth_"):
            medians[f["key"][len("decode_depth_"):]] = {
                side: (f[key] or {}).get("median")
                for side, key in (("staticlm", "staticlm_summary"), ("llama.cpp", "peer_summary"))}
    samples = [bw for bw, _ in probes if bw]
    try:
        info = bandwidth_bound.model_bytes(model)
    except (ImportError, KeyError, TypeError) as e:
        return {"decode_medians": medians, "bandwidth_bound_skipped": "cannot read the file's "
                "tensors with the gguf package: %r" % e}
    if not samples:
        return {"decode_medians": medians, "bandwidth_bound_skipped": "no bandwidth probe"}
    by_depth = bandwidth_bound.bound(info, max(samples), cfg["depths"])
    return {"decode_medians": medians, "bandwidth_bound": {
        "model": info, "threads": cfg["threads"], "bandwidth_samples": samples,
        "bandwidth_bytes_per_s": max(samples),
        "by_depth": {str(d): v for d, v in by_depth.items()},
        # staticlm's own cost model of a step (weights as it stores them, KV, activations).
        "staticlm_bytes_read_per_decode_step": probes[0][1]}}


def check_gpu_offload():
    """Raises RuntimeError unless the importable llama_cpp can offload to a GPU (Vulkan)."""
    import llama_cpp  # pylint: disable=import-outside-toplevel
    if not llama_cpp.llama_supports_gpu_offload():
        raise RuntimeError(
            "llama_cpp from %s has no GPU offload: put a llama-cpp-python built with "
            "-DGGML_VULKAN=on first on PYTHONPATH (bench/README.md)" % llama_cpp.__file__)


def run(staticlm, model, tokens, cfg, log=sys.stderr):
    """Alternating rounds -> JSON-ready dict with raw samples, figures and settings."""
    probes = [_probe_bandwidth(staticlm, log)]
    llama = LlamaCpp(model, cfg["threads"], cfg["ctx"], n_gpu_layers=cfg.get("n_gpu_layers", 0))
    llama.warm_up(tokens)
    raw_ours, raw_peer, timeline = [], [], []
    try:
        for r in range(cfg["reps"]):
            for side in ("staticlm", "llama.cpp"):
                load = os.getloadavg()[0]
                start = time.time()
                if side == "staticlm":
                    sample = _staticlm_round(staticlm, cfg)
                    raw_ours.append(sample)
                    brief = "prefill %.0f tok/s, decode %s" % (
                        sample["prefill"][0]["prefill_tokens_per_s"],
                        _fmt_depths({d: _staticlm_decode(sample, d) for d in cfg["depths"]}))
                else:
                    sample = llama.round(tokens, cfg["prefill_sizes"], cfg["depths"],
                                         cfg["gen_tokens"])
                    raw_peer.append(sample)
                    brief = "prefill %.0f tok/s, decode %s" % (
                        sample["prefill_tokens_per_s_by_size"][cfg["prefill_sizes"][0]],
                        _fmt_depths(sample["decode_tokens_per_s_by_depth"]))
                seconds = time.time() - start
                timeline.append({"round": r, "side": side, "start_unix": start,
                                 "seconds": seconds, "load_1m": load})
                print("[compare] round %d/%d %-9s %5.1fs load %.1f: %s" % (
                    r + 1, cfg["reps"], side, seconds, load, brief), file=log, flush=True)
    finally:
        llama.close()
    probes.append(_probe_bandwidth(staticlm, log))
    figs = figures(raw_ours, raw_peer, llama.init_ms, cfg)
    return {**_bandwidth_bound(model, probes, figs, cfg),
            "settings": {"staticlm": {"binary": staticlm.binary,
                                      "extra_args": staticlm.extra_args,
                                      "bench_config": raw_ours[0]["prefill"][0]["config"],
                                      "backend": raw_ours[0]["prefill"][0]["backend"]},
                         "llama.cpp": llama.settings},
            "figures": figs,
            "timeline": timeline,
            "raw": {"staticlm": raw_ours, "llama.cpp": raw_peer,
                    "llama.cpp_init_ms": llama.init_ms}}


def _fmt_depths(by_depth):
    return ", ".join("d%d %.1f" % (d, v) for d, v in sorted(by_depth.items()) if v is not None)
