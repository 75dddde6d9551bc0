"""Part 2: the seed experiment (../shared/seeds/002): N new tokens from a short prompt with
transformers' three cache modes — none, dynamic (default), static (+ torch.compile) — against
`staticlm run`, greedy on both sides, the same GGUF file.

Per rep: staticlm, transformers(mode) for each mode in turn, so every transformers sample sits
next to a staticlm sample in time. The staticlm samples of all modes are pooled into one
summary. The no-cache mode is slow (every step re-reads the whole sequence), so it may run
fewer reps. Before measuring: one untimed generation per side and mode; for the static cache
that untimed run is the torch.compile of the forward, timed and limited.
"""

import os
import sys
import time

from compare_lib.hf_side import HfError, HfTimeout, HfWorker
from compare_lib.stats import ratios, summarize

MODES = (("nocache", "no cache (use_cache=False)"),
         ("dynamic", "dynamic cache (default)"),
         ("static", "static cache"))


def _common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _start_worker(model, cfg, log):
    compile_static = cfg["compile"]
    worker = HfWorker(model, cfg["threads"], cfg["prompt"], compile_static)
    print("[compare] transformers loaded in %.1fs (torch threads %d, attention %s)" % (
        worker.ready["load_s"], worker.ready["torch_threads"],
        worker.ready["attn_implementation"]), file=log, flush=True)
    return worker


def _warm_static(worker, model, cfg, log):
    """Untimed static-cache run: compiles when asked. Returns (worker, static note, seconds)."""
    if not cfg["compile"]:
        worker.generate("static", cfg["new_tokens"], cfg["generate_timeout"])
        return worker, "without torch.compile (--no-compile)", None
    start = time.perf_counter()
    try:
        worker.generate("static", cfg["new_tokens"], cfg["compile_timeout"])
        seconds = time.perf_counter() - start
        print("[compare] static cache: torch.compile warm-up took %.0fs" % seconds,
              file=log, flush=True)
        return worker, "with torch.compile of the decode forward (CompileConfig defaults, " \
                       "compile on CPU forced); warm-up/compile run %.0fs" % seconds, seconds
    except (HfTimeout, HfError) as e:
        reason = str(e).splitlines()[0]
        print("[compare] static cache: torch.compile failed (%s); running it without compile"
              % reason, file=log, flush=True)
        worker.close()
        worker = _start_worker(model, dict(cfg, compile=False), log)
        worker.generate("static", cfg["new_tokens"], cfg["generate_timeout"])
        return worker, "WITHOUT torch.compile: the compile attempt failed or took too " \
                       "long (%s)" % reason, None


def run(staticlm, model, cfg, log=sys.stderr):
    """Alternating reps -> JSON-ready dict with raw samples, figures and notes."""
    n = cfg["new_tokens"]
    staticlm.run(cfg["prompt"], n)  # untimed warm-up
    worker = _start_worker(model, cfg, log)
    raw_ours, raw_peer, timeline = [], {m: [] for m, _ in MODES}, []
    try:
        worker.generate("dynamic", min(n, 16), cfg["generate_timeout"])
        worker.generate("nocache", min(n, 16), cfg["generate_timeout"])
        worker, static_note, compile_s = _warm_static(worker, model, cfg, log)
        for r in range(cfg["reps"]):
            for mode, _ in MODES:
                if mode == "nocache" and r >= cfg["nocache_reps"]:
                    continue
                for side in ("staticlm", "transformers " + mode):
                    load = os.getloadavg()[0]
                    start = time.time()
                    if side == "staticlm":
                        sample = staticlm.run(cfg["prompt"], n)
                        raw_ours.append(dict(sample, paired_with=mode))
                    else:
                        sample = worker.generate(mode, n, cfg["generate_timeout"])
                        raw_peer[mode].append(sample)
                    seconds = time.time() - start
                    timeline.append({"rep": r, "side": side, "start_unix": start,
                                     "seconds": seconds, "load_1m": load})
                    print("[compare] rep %d/%d %-22s %6.1fs load %.1f: %d tokens, "
                          "end-to-end %.1f tok/s, decode %.1f tok/s" % (
                              r + 1, cfg["reps"], side, seconds, load,
                              sample["tokens_generated"], sample["end_to_end_tokens_per_s"],
                              sample["decode_tokens_per_s"] or 0), file=log, flush=True)
    finally:
        ready = worker.ready
        worker.close()
    return {"settings": _settings(cfg, ready, static_note, compile_s),
            "figures": _figures(raw_ours, raw_peer, cfg),
            "checks": _checks(raw_ours, raw_peer, ready, n),
            "timeline": timeline,
            "raw": {"staticlm": raw_ours, "transformers": raw_peer}}


def _settings(cfg, ready, static_note, compile_s):
    return {"prompt": cfg["prompt"], "new_tokens": cfg["new_tokens"], "threads": cfg["threads"],
            "reps": cfg["reps"], "nocache_reps": min(cfg["nocache_reps"], cfg["reps"]),
            "transformers": {"dtype": "float32", "device": "cpu", "sampling": "greedy",
                             "load_s": ready["load_s"], "torch_threads": ready["torch_threads"],
                             "attn_implementation": ready["attn_implementation"],
                             "static_cache": static_note, "compile_s": compile_s,
                             "compile_config": ready.get("compile_config")},
            "staticlm": "staticlm run --json --temperature 0 (defaults otherwise)"}


def _figures(raw_ours, raw_peer, cfg):
    out = []
    for what, key, label in (("end_to_end", "end_to_end_tokens_per_s",
                              "end-to-end (tokens / generation time)"),
                             ("decode", "decode_tokens_per_s", "decode")):
        ours = [s[key] for s in raw_ours]
        s_ours = summarize(ours, True)
        for mode, mode_label in MODES:
            peer = [s[key] for s in raw_peer[mode]]
            s_peer = summarize(peer, True)
            note = None
            if mode == "nocache" and cfg["nocache_reps"] < cfg["reps"]:
                note = "transformers no-cache: %d reps only (slow)" % len(peer)
            out.append({"key": "%s_%s" % (what, mode), "label": "%s, %s" % (label, mode_label),
                        "unit": "tok/s", "higher_is_better": True, "staticlm": ours,
                        "peer": peer, "staticlm_summary": s_ours, "peer_summary": s_peer,
                        "ratio": ratios(s_ours, s_peer), "note": note})
    return out


def _checks(raw_ours, raw_peer, ready, n):
    """Do both sides do the same work? Prompt ids, tokens generated, greedy agreement."""
    ours = raw_ours[0] if raw_ours else None
    checks = {"staticlm_prompt_ids": ours["prompt_tokens"] if ours else None,
              "transformers_prompt_ids": ready["prompt_ids"],
              "staticlm_tokens_generated": sorted({s["tokens_generated"] for s in raw_ours}),
              "staticlm_stopped_early": any(s["stopped_early"] for s in raw_ours),
              "requested_tokens": n,
              "staticlm_text": ours["text"] if ours else None}
    checks["prompt_ids_match"] = bool(ours) and ours["prompt_tokens"] == ready["prompt_ids"]
    for mode, samples in raw_peer.items():
        if samples and ours:
            checks["transformers_%s_tokens_generated" % mode] = sorted(
                {s["tokens_generated"] for s in samples})
            checks["greedy_agreement_%s" % mode] = _common_prefix(ours["tokens"],
                                                                  samples[0]["tokens"])
    if raw_peer["dynamic"]:
        checks["transformers_text"] = raw_peer["dynamic"][0]["text"]
    return checks
