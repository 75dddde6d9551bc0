#!/usr/bin/env python3
"""Medians of staticlm and llama.cpp on one CUDA device, from scripts/cuda-device-check's
peer.log (CUDA_CHECK_PEER=1): sections "== round R llama.cpp MODEL" holding llama-bench's JSON
(-o json: one object per test, with its per-repetition tok/s in samples_ts) and "== round R
staticlm MODEL" holding `staticlm bench`'s text (its per-depth median tok/s). Both sides are
reduced the same way: the median of the per-repetition (llama.cpp) or per-run median
(staticlm) figures over every round. Prints the peer's build beside the figures.

    bench/cuda_peer_medians.py OUTDIR/peer.log
"""
import json
import re
import statistics
import sys
from collections import defaultdict

HEADER = re.compile(r"^== round (\d+) (llama\.cpp|staticlm) (\S+)$")


def sections(lines):
    """Yields (side, model, body lines) for each section of the log."""
    side = model = None
    body = []
    for line in lines:
        m = HEADER.match(line.rstrip("\n"))
        if m:
            if side:
                yield side, model, body
            side, model, body = m.group(2), m.group(3), []
        elif side:
            body.append(line)
    if side:
        yield side, model, body


def llama_figures(body):
    """{(kind, depth): [tok/s samples]} and the build description from llama-bench's JSON."""
    text = "".join(line for line in body if not line.startswith("exit "))
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return {}, None
    tests = json.loads(text[start:end + 1])
    figures, build = {}, None
    for t in tests:
        build = "llama.cpp build %s (%s), %s, %s, flash attention %s, K/V %s/%s" % (
            t["build_number"], t["build_commit"], t["backends"], t["gpu_info"] or "no GPU",
            t["flash_attn"], t["type_k"], t["type_v"])
        if not t["gpu_info"]:
            # CUDA failed to start and llama-bench ran on the CPU: no figure for a GPU peer.
            build += ": ran on the CPU, its figures left out"
            continue
        kind = "prefill" if t["n_prompt"] > 0 else "decode"
        figures[(kind, t["n_depth"])] = list(t["samples_ts"])
    return figures, build


def staticlm_figures(body):
    """{(kind, depth): [median tok/s]} from `staticlm bench` text."""
    figures = {}
    in_decode = False
    for line in body:
        if line.startswith("prefill"):
            figures[("prefill", 0)] = [float(line.split()[1])]
        elif line.startswith("  depth"):
            in_decode = True
        elif in_decode:
            fields = line.split()
            if len(fields) < 3 or not fields[0].isdigit():
                in_decode = False
                continue
            figures[("decode", int(fields[0]))] = [float(fields[1])]
    return figures


def main(path):
    samples = defaultdict(lambda: defaultdict(list))  # (model, kind, depth) -> side -> values
    builds = set()
    with open(path) as f:
        lines = f.readlines()
    for line in lines[:1]:
        if not HEADER.match(line):
            builds.add("peer bundle: " + line.strip())
    for side, model, body in sections(lines):
        if side == "llama.cpp":
            figures, build = llama_figures(body)
            if build:
                builds.add(build)
        else:
            figures = staticlm_figures(body)
        for (kind, depth), values in figures.items():
            samples[(model, kind, depth)][side].extend(values)
    for build in sorted(builds):
        print(build)
    print("%-40s %-8s %6s %12s %12s %7s" % ("model", "", "depth", "staticlm", "llama.cpp",
                                           "ratio"))
    for (model, kind, depth), sides in sorted(samples.items()):
        ours, peer = sides.get("staticlm"), sides.get("llama.cpp")
        if not ours or not peer:
            continue
        a, b = statistics.median(ours), statistics.median(peer)
        print("%-40s %-8s %6d %12.1f %12.1f %6.2fx" % (model, kind, depth, a, b, a / b))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bench/cuda_peer_medians.py PEER_LOG")
    sys.exit(main(sys.argv[1]))
