"""The bandwidth bound of decoding, from the GGUF file alone (the same for every runtime).

A decode step of a small model reads every weight once, so no runtime can decode faster than
(read bandwidth) / (bytes a step must read). The bytes come from the file's tensors, not from
either runtime's own cost model:

* every tensor once, the embedding table included when it doubles as the output head (tied, as
  in SmolLM2 and Gemma 3: Gemma's 262,144 x 640 Q8_0 table is about 72 % of its bytes), else
  one row of it;
* the KV cache a step attends to at depth d, at 2 bytes per element (f16, both sides' cache):
  d + 1 positions on a global layer, at most the window on a sliding one (Gemma 3: every
  sixth layer global, the others windowed, as llama.cpp and transformers lay it out).

Activations and the logits written are left out (well under 1 % here). The bandwidth is
measured by staticlm's probe (platform/bandwidth_probe.h, through `staticlm bench`): T threads
streaming a large buffer, best of 5 passes.
"""

# Layers per group of which the last one is global, per architecture with a sliding window.
_SLIDING_PATTERN = {"gemma3": 6}
_KV_BYTES_PER_ELEMENT = 2  # f16


def _field(reader, key, default=None):
    field = reader.fields.get(key)
    return default if field is None else field.contents()


def model_bytes(path):
    """What a decode step reads from the file -> dict (raises ImportError without gguf)."""
    import gguf  # pylint: disable=import-outside-toplevel

    reader = gguf.GGUFReader(path)
    arch = _field(reader, "general.architecture")
    tensors = {t.name: t for t in reader.tensors}
    embd = tensors["token_embd.weight"]
    tied = "output.weight" not in tensors
    rows = int(embd.shape[-1])
    weights = sum(int(t.n_bytes) for n, t in tensors.items() if n != "token_embd.weight")
    embd_read = int(embd.n_bytes) if tied else int(embd.n_bytes) // rows
    heads_kv = int(_field(reader, arch + ".attention.head_count_kv"))
    d_model = int(_field(reader, arch + ".embedding_length"))
    heads = int(_field(reader, arch + ".attention.head_count"))
    k_len = int(_field(reader, arch + ".attention.key_length", d_model // heads))
    v_len = int(_field(reader, arch + ".attention.value_length", d_model // heads))
    return {
        "architecture": arch,
        "layers": int(_field(reader, arch + ".block_count")),
        "weights_bytes": weights + embd_read,
        "embedding_bytes": int(embd.n_bytes),
        "embedding_type": embd.tensor_type.name,
        "embedding_shape": [int(x) for x in reversed(embd.shape)],
        "tied_head": tied,
        "kv_bytes_per_position_per_layer": heads_kv * (k_len + v_len) * _KV_BYTES_PER_ELEMENT,
        "sliding_window": _field(reader, arch + ".attention.sliding_window"),
        "sliding_pattern": _SLIDING_PATTERN.get(arch),
    }


def kv_bytes(info, depth):
    """Cache bytes one step at position `depth` attends to (depth + 1 positions, windowed)."""
    total = 0
    window, pattern = info["sliding_window"], info["sliding_pattern"]
    for layer in range(info["layers"]):
        is_global = not window or not pattern or layer % pattern == pattern - 1
        positions = depth + 1 if is_global else min(depth + 1, int(window))
        total += positions * info["kv_bytes_per_position_per_layer"]
    return total


def bound(info, bandwidth, depths):
    """Per depth: bytes per decoded token and the tokens/s the bandwidth allows."""
    out = {}
    for depth in depths:
        step = info["weights_bytes"] + kv_bytes(info, depth)
        out[depth] = {"bytes_per_token": step,
                      "tokens_per_s": bandwidth / step if bandwidth else None}
    return out


def describe(part):
    """One paragraph for the report: the bound and each side's decode median as % of it."""
    b = part.get("bandwidth_bound")
    if not b:
        return "Bandwidth bound: not measured (%s)." % (part.get("bandwidth_bound_skipped")
                                                        or "no probe")
    info = b["model"]
    head = ("the tied output head %s %s (%.0f MB)" % (
        " x ".join("{:,}".format(x) for x in info["embedding_shape"]), info["embedding_type"],
        info["embedding_bytes"] / 1e6) if info["tied_head"] else "the embedding row")
    rows = []
    for depth, entry in sorted(b["by_depth"].items(), key=lambda kv: int(kv[0])):
        medians = part["decode_medians"].get(str(depth)) or {}
        shares = ", ".join("%s %.0f %%" % (side, 100.0 * v / entry["tokens_per_s"])
                           for side, v in medians.items() if v and entry["tokens_per_s"])
        rows.append("depth %s: %.1f MB per token -> %.1f tok/s (%s)" % (
            depth, entry["bytes_per_token"] / 1e6, entry["tokens_per_s"] or 0, shares or "–"))
    return ("Bandwidth bound (decode tokens/s no runtime can exceed): bytes read per decoded "
            "token from the file's tensors — %.1f MB of weights including %s — plus the f16 KV "
            "cache the step attends to, divided by the read bandwidth staticlm's probe measured "
            "(%d threads, best of the probes before and after the rounds: %s GB/s). %s. "
            "Percentages: each side's median decode as a share of the bound." % (
                info["weights_bytes"] / 1e6, head, b["threads"],
                " and ".join("%.1f" % (x / 1e9) for x in b["bandwidth_samples"]),
                "; ".join(rows)))
