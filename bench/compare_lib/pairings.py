"""Both x86 pairings in one run (issue 16): on an AVX-512 machine staticlm --isa avx512 against
the natively built peer, and staticlm --isa avx2 against a peer built with AVX2 and without
AVX-512 (compare_lib/peer.py). Two llama-cpp-python builds cannot share one Python process, so
each (model, pairing) runs as a child `bench/compare --isa … --peer-path …`, in turn; this
module starts them, collects their JSON and writes one report with a summary table on top."""

import glob
import json
import os
import subprocess
import sys
import tempfile

from compare_lib import report


def child_args(args, model, isa, peer_path, out_dir, with_transformers):
    """The flags of one child run: the parent's measurement settings for one model and ISA."""
    argv = ["--model", model, "--isa", isa, "--out", out_dir, "--threads", str(args.threads),
            "--reps", str(args.reps), "--ctx", str(args.ctx), "--gen-tokens", str(args.gen_tokens),
            "--prefill-tokens", ",".join(map(str, args.prefill_tokens)),
            "--depths", ",".join(map(str, args.depths)), "--staticlm", args.staticlm,
            "--machine-name", "%s-%s" % (args.machine_name or "run", isa)]
    if args.staticlm_args:
        argv += ["--staticlm-args=" + args.staticlm_args]
    if peer_path:
        argv += ["--peer-path", peer_path]
    if with_transformers:
        argv += ["--new-tokens", str(args.new_tokens), "--nocache-reps", str(args.nocache_reps),
                 "--compile-timeout", str(args.compile_timeout)]
        argv += ["--no-compile"] if args.no_compile else []
    else:
        argv += ["--skip-transformers"]
    return argv


def plan(args, isas):
    """[(model, isa, peer_path)] in run order: per model, the widest ISA first."""
    pairs = [("avx512", args.peer_path)] if "avx512" in isas else []
    pairs.append(("avx2", args.avx2_peer_path if "avx512" in isas else args.peer_path))
    return [(model, isa, path) for model in args.model for isa, path in pairs]


def check_peers(script, runs):
    """Each distinct (ISA, peer) is checked by a child `--check-peer` before anything is
    measured; returns the first refusal's message, or None."""
    for isa, path in sorted({(isa, path or "") for _, isa, path in runs}):
        cmd = [sys.executable, script, "--check-peer", "--isa", isa]
        cmd += ["--peer-path", path] if path else []
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
        sys.stderr.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            return (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1]
    return None


def run(script, args, runs, done, log=sys.stderr):
    """Runs every (model, isa, peer) child in turn -> list of {"model", "isa", "peer_path",
    "result"}; transformers (when not skipped) only with the first child. Calls done(list so
    far) after each, so a long run that is cut short keeps what it measured."""
    out = []
    for i, (model, isa, peer_path) in enumerate(runs):
        with tempfile.TemporaryDirectory(prefix="staticlm-pairing-") as tmp:
            argv = child_args(args, model, isa, peer_path, tmp,
                              i == 0 and not args.skip_transformers)
            print("[compare] pairing %d/%d: %s" % (i + 1, len(runs), " ".join(argv)), file=log,
                  flush=True)
            proc = subprocess.run([sys.executable, script, *argv], check=False)
            if proc.returncode != 0:
                raise RuntimeError("pairing %s with %s failed (exit %d)" % (
                    isa, os.path.basename(model), proc.returncode))
            (path,) = glob.glob(os.path.join(tmp, "*.json"))
            with open(path, encoding="utf-8") as f:
                out.append({"model": model, "isa": isa, "peer_path": peer_path,
                            "result": json.load(f)})
        done(out)
    return out


def _summary_rows(entry):
    part = entry["result"].get("llama.cpp")
    if not part:
        return []
    peer = part.get("peer") or {}
    rows = []
    for f in part["figures"]:
        if f["unit"] != "tok/s":
            continue
        ours, theirs, r = f["staticlm_summary"], f["peer_summary"], f["ratio"] or {}
        paired = f.get("paired") or {}
        rows.append("| %s | %s | %s | %s | %.1f (%.1f) | %.1f (%.1f) | %s | %s | %s |" % (
            entry["result"]["model"], "staticlm --isa %s" % entry["isa"],
            "llama.cpp %s" % _peer_label(peer), f["label"], ours["median"], ours["best"],
            theirs["median"], theirs["best"],
            "%.2f" % r["median"] if r.get("median") else "–",
            "%.2f" % r["best"] if r.get("best") else "–",
            "%.2f (%.2f–%.2f)" % (paired["median"], paired["min"], paired["max"])
            if paired else "–"))
    return rows


def _peer_label(peer):
    have = peer.get("features") or {}
    if have.get("AVX512") == 1:
        return "AVX512 = 1"
    if have.get("AVX2") == 1:
        return "AVX2 = 1, AVX512 = 0"
    return "?"


def markdown(result):
    """The combined report: header, load, summary of every pairing, then each child's report
    (headings one level down)."""
    m = result["machine"]
    loads = [t["load_1m"] for e in result["runs"]
             for t in (e["result"].get("llama.cpp") or {}).get("timeline", [])]
    out = ["# staticlm vs llama.cpp per x86 ISA — %s, %s" % (m["date"], result["machine_name"]),
           "", "Command: `%s`" % result["command"], "",
           "Machine: %s, %d cores (%s); staticlm %s. Both pairings ran on this machine, one after "
           "the other: staticlm `--isa avx512` against a natively built llama-cpp-python, and "
           "staticlm `--isa avx2` against one built with `-DGGML_NATIVE=OFF -DGGML_AVX2=ON "
           "-DGGML_AVX512=OFF` (FMA, F16C, BMI2 on); each peer's `llama_print_system_info()` is "
           "quoted in its section." % (m["cpu"], m["cores"], " ".join(m["cpu_simd_flags"]),
                                      m["staticlm_commit"]), ""]
    if result.get("note"):
        out += ["**Note:** %s" % result["note"], ""]
    if not result.get("complete", True):
        out += ["**Incomplete:** %d of the planned pairings ran." % len(result["runs"]), ""]
    out += ["Load: 1-minute load average %.1f at the start and %.1f at the end%s." % (
        result["load_average_at_start"][0], result["load_average_at_end"][0],
        "; %.1f–%.1f at the start of the measured rounds" % (min(loads), max(loads))
        if loads else ""), ""]
    out += ["## Summary (tokens/s, median of alternating rounds, best in brackets)", "",
            "| model | staticlm | peer | figure | staticlm | llama.cpp | ratio of medians | "
            "ratio of bests | per-round ratios: median (min–max) |", "|" + "---|" * 9]
    for entry in result["runs"]:
        out += _summary_rows(entry)
    out.append("")
    for entry in result["runs"]:
        text = report.markdown(entry["result"])
        out += ["#" + line if line.startswith("#") else line for line in text.splitlines()]
        out.append("")
    return "\n".join(out)
