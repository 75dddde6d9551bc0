"""The comparison as a Markdown report (also printed to the terminal)."""

from compare_lib import bound as bandwidth_bound
from compare_lib.stats import paired_ratios

STATISTICS = (
    "How to read the figures: each side ran n rounds, alternating (staticlm, peer, staticlm, "
    "…). Per side: the median of its n samples, the best sample (highest tok/s, lowest ms) and "
    "min–max with the spread (max − min) / median. Ratios are always staticlm / peer: above 1 "
    "means staticlm is faster for tok/s, below 1 means staticlm is faster for ms. 'ratio of "
    "medians' divides the two medians; 'ratio of bests' the two best samples; 'per-round "
    "ratios' divides round r of staticlm by round r of the peer (seconds apart, under nearly "
    "the same load) and gives the median and range of those n ratios. A difference is real "
    "when all three ratios lie on the same side of 1 and the per-round range does too.")


def _num(value, unit):
    if value is None:
        return "–"
    if unit == "ms" and value >= 1000:
        return "%.0f" % value
    return "%.1f" % value if value < 10000 else "%.0f" % value


def _side(summary, unit):
    if not summary:
        return ["–", "–", "–"]
    spread = summary["spread_pct"]
    rng = "%s–%s" % (_num(summary["min"], unit), _num(summary["max"], unit))
    rng += " (%.0f%%, n=%d)" % (spread, summary["n"]) if spread is not None else ""
    return [_num(summary["median"], unit), _num(summary["best"], unit), rng]


def _ratio(r, key):
    return "%.2f" % r[key] if r and r.get(key) is not None else "–"


def _paired(f):
    """The per-round ratios (recomputed from the samples for runs saved before they existed)."""
    p = f.get("paired")
    if p is None and len(f["staticlm"]) == len(f["peer"]):
        p = paired_ratios(f["staticlm"], f["peer"])
    if not p:
        return "–"
    return "%.2f (%.2f–%.2f, n=%d)" % (p["median"], p["min"], p["max"], p["n"])


def table(figures, peer_name):
    """Markdown table: absolute figures for both sides, then staticlm/peer ratios."""
    head = ("| figure | unit | staticlm median | staticlm best | staticlm min–max | "
            "%s median | %s best | %s min–max | ratio of medians | ratio of bests | "
            "per-round ratios: median (min–max) |" % (peer_name, peer_name, peer_name))
    lines = [head, "|" + "---|" * 11]
    for f in figures:
        cells = [f["label"], f["unit"], *_side(f["staticlm_summary"], f["unit"]),
                 *_side(f["peer_summary"], f["unit"]), _ratio(f["ratio"], "median"),
                 _ratio(f["ratio"], "best"), _paired(f)]
        lines.append("| " + " | ".join(cells) + " |")
    notes = []
    for f in figures:
        if f.get("note") and f["note"] not in notes:
            notes.append(f["note"])
    return "\n".join(lines + [""] + ["* " + n for n in notes])


def noise_note(figures, timeline, peer_name, threads, extra=None):
    """How noisy the samples were, in words: spreads against medians, load during the run."""
    spreads = {"staticlm": [], "peer": []}
    disagree = []
    for f in figures:
        for side in spreads:
            s = f[side + "_summary"]
            if s and s["n"] > 1 and s["spread_pct"] is not None:
                spreads[side].append((s["spread_pct"], f["label"]))
        r = f["ratio"]
        if r and r["median"] and r["best"]:
            disagree.append(abs(r["median"] / r["best"] - 1) * 100)
    parts = []
    for side, label in (("staticlm", "staticlm"), ("peer", peer_name)):
        values = spreads[side]
        if values:
            worst = max(values)
            parts.append("%s: spread (max−min)/median %.0f–%.0f%% per figure (widest: %s)" % (
                label, min(v for v, _ in values), worst[0], worst[1]))
    loads = [t["load_1m"] for t in timeline]
    if loads:
        parts.append("1-minute load average during the run %.1f–%.1f (this run's own %d "
                     "threads count towards it)" % (min(loads), max(loads), threads))
    if disagree:
        parts.append("ratio of medians vs ratio of bests differ by up to %.0f%%" % max(disagree))
    if extra:
        parts.append(extra)
    return "Noise: " + "; ".join(parts) + "."


def _peer_line(result, part):
    """Which peer ran and what it was compiled for, and the staticlm ISA it was paired with."""
    p = part.get("peer")
    if not p:
        return []
    return ["Pairing: staticlm `--isa %s` (backend: %s) vs llama-cpp-python %s loaded from `%s`, "
            "whose `llama_print_system_info()` reads: `%s`." % (
                result.get("isa", "auto"), part["settings"]["staticlm"]["backend"], p["version"],
                p["path"], p["system_info"]), ""]


def markdown(result):
    """The whole report: header, one section per peer, machine description."""
    m = result["machine"]
    out = ["# staticlm vs peers — %s, %s" % (m["date"], result["machine_name"]), "",
           "Command: `%s`" % result["command"], "",
           "Machine: %s, %d cores (%s), %.1f GiB, %s, kernel %s; staticlm %s (`%s` built "
           "%s); llama-cpp-python %s; torch %s; transformers %s." % (
               m["cpu"], m["cores"], " ".join(m["cpu_simd_flags"]),
               (m["memory_bytes"] or 0) / 2**30, m["os"], m["kernel"], m["staticlm_commit"],
               m.get("staticlm_binary"), m.get("staticlm_binary_built"),
               m["versions"]["llama_cpp_python"], m["versions"]["torch"],
               m["versions"]["transformers"]), "",
           "Model: `%s`, %d threads on every side." % (result["model"], m["threads"]), "",
           STATISTICS, ""]
    part = result.get("llama.cpp")
    if part:
        out += ["## staticlm vs llama.cpp (llama-cpp-python)", "", *_peer_line(result, part),
                table(part["figures"], "llama.cpp"), "", bandwidth_bound.describe(part), "",
                part["description"], "",
                noise_note(part["figures"], part["timeline"], "llama.cpp", m["threads"],
                           part.get("noise_extra")), ""]
    part = result.get("transformers")
    if part:
        out += ["## staticlm vs transformers (torch, CPU, float32)", "",
                table(part["figures"], "transformers"), "", part["description"], "",
                noise_note(part["figures"], part["timeline"], "transformers", m["threads"]), ""]
    for skipped in result.get("skipped", []):
        out += ["(%s: skipped)" % skipped, ""]
    return "\n".join(out)
