#!/usr/bin/env python3
"""Writes the golden data for the Q5 and K-quant weight types, with gguf-py
(the `gguf` PyPI package, gguf.quants.dequantize) as the oracle:

tests/golden/quant_blocks.txt
    For each of Q5_0, Q5_1, Q4_K, Q5_K and Q6_K, a few blocks of seeded random
    bytes whose f16 scale fields are overwritten with chosen finite halves
    (positive, negative, subnormal and zero scales), and the float32 values
    gguf-py decodes from them, as hex bit patterns (so -0.0 and every last
    bit are compared). quant_blocks_test decodes the same bytes and requires
    the same bits.

tests/golden/gemma3_dequant_digests.txt
    For every tensor of models/gemma-3-270m-q4_k_m.gguf (read with
    gguf.GGUFReader), a digest of its float32 values as gguf-py dequantizes
    them. gemma3_dequant_test dequantizes every tensor with staticlm's
    DequantizeRow and compares. Skipped (with a note in the output) when the
    model file is absent.

Digest: the tensor's values in file order (ne[0] fastest), each as the u32 bit
pattern b of its float32, mixed to w = b ^ (b >> 16) and folded by Horner's
rule modulo 2^64:
    h = 0;  for each value:  h = h * K + w  (mod 2^64)
with K = 0x9E3779B97F4A7C15. K is odd and the mixing is invertible, so a change
in any single value changes h; the mixing brings high bits down, because
decoded quants often end in a run of zero mantissa bits, which Horner's rule
alone would leave as zero low bits of h. Not cryptographic; it only has to
catch a decoder that differs.

Run:  python3 tests/reference/make_quant_golden.py [--blocks-only]
Needs gguf and numpy (tests/reference/requirements.txt); no network. About a
minute on the 2-core dev machine, most of it the 262144 x 640 embedding table.
The output is deterministic: rerunning it changes only the `# date:` lines.
"""

import argparse
import datetime
import hashlib
import importlib.metadata
import os

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GOLDEN_DIR = os.path.join(REPO, "tests", "golden")
MODEL = os.path.join(REPO, "models", "gemma-3-270m-q4_k_m.gguf")

SEED = 20261125
K = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1

# Byte offsets of the f16 fields in each block (ggml's block structs), and how
# many blocks to write. Every other byte stays random.
HALF_FIELDS = {
    T.Q5_0: [0],          # d
    T.Q5_1: [0, 2],       # d, m
    T.Q4_K: [0, 2],       # d, dmin
    T.Q5_K: [0, 2],       # d, dmin
    T.Q6_K: [208],        # d (last)
}
BLOCKS = {T.Q5_0: 4, T.Q5_1: 4, T.Q4_K: 3, T.Q5_K: 3, T.Q6_K: 3}

# The halves written into the f16 fields of block b: one tuple per block, one
# value per field (cycled). Bits, so subnormals and signed zeros are exact.
HALF_CHOICES = [
    (0x2E66, 0x9C00),  # 0.1, -0.0039: ordinary scales of both signs
    (0xB555, 0x03FF),  # -0.333, the largest subnormal
    (0x0001, 0x8010),  # the smallest subnormal, a negative subnormal
    (0x0000, 0x8000),  # +0 and -0: every value a signed zero
]


def oracle_values(qtype: T, blocks: np.ndarray) -> np.ndarray:
    values = gguf.quants.dequantize(blocks, qtype)
    return np.ascontiguousarray(values, dtype=np.float32).reshape(-1)


def make_blocks(qtype: T, rng: np.random.Generator) -> np.ndarray:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n = BLOCKS[qtype]
    raw = rng.integers(0, 256, size=(n, type_size), dtype=np.uint8)
    if qtype in (T.Q4_K, T.Q5_K):
        raw[1, 4:16] = 0xFF  # block 1: every packed 6-bit scale and min at its maximum, 63
    for b in range(n):
        for i, at in enumerate(HALF_FIELDS[qtype]):
            bits = HALF_CHOICES[b][i % 2]
            raw[b, at] = bits & 0xFF
            raw[b, at + 1] = bits >> 8
    return raw


def hex_bits(values: np.ndarray) -> str:
    return " ".join(f"{int(u):08x}" for u in values.view(np.uint32))


def header(generator_note: str) -> list[str]:
    return [
        f"# generator: tests/reference/make_quant_golden.py ({generator_note})",
        f"# gguf {importlib.metadata.version('gguf')}, numpy {np.__version__}",
        f"# date: {datetime.date.today().isoformat()}",
    ]


def write_blocks() -> None:
    rng = np.random.default_rng(SEED)
    lines = header("oracle: gguf.quants.dequantize") + [
        "# Per type: `type <name> <ggml id> <blocks>`, then `bytes <hex of the blocks>`, then",
        "# `values <f32 bit patterns, hex, one per element>`. Scale choices per block (f16 bits):",
        "# " + ", ".join(f"{a:04x}/{b:04x}" for a, b in HALF_CHOICES),
    ]
    for qtype in HALF_FIELDS:
        blocks = make_blocks(qtype, rng)
        values = oracle_values(qtype, blocks)
        assert np.all(np.isfinite(values)), qtype.name
        lines.append(f"type {qtype.name} {int(qtype)} {blocks.shape[0]}")
        lines.append("bytes " + blocks.tobytes().hex())
        lines.append("values " + hex_bits(values))
    path = os.path.join(GOLDEN_DIR, "quant_blocks.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}")


def digest(values: np.ndarray, chunk: int = 1 << 22) -> int:
    """Horner's rule over the mixed u32 bits, vectorised one chunk at a time:
    h' = h * K^m + sum_j w[j] * K^(m-1-j)  (mod 2^64, numpy's uint64 wraps)."""
    words = values.reshape(-1).view(np.uint32)
    words = words ^ (words >> np.uint32(16))
    factors = np.concatenate([np.ones(1, dtype=np.uint64), np.full(chunk, K, dtype=np.uint64)])
    powers = np.cumprod(factors, dtype=np.uint64)  # powers[i] = K^i mod 2^64
    h = 0
    for start in range(0, words.size, chunk):
        w = words[start:start + chunk].astype(np.uint64)
        m = w.size
        part = int((w * powers[:m][::-1]).sum(dtype=np.uint64))
        h = (h * int(powers[m]) + part) & MASK
    return h


def digest_slow(values: np.ndarray) -> int:
    h = 0
    for u in values.reshape(-1).view(np.uint32):
        h = (h * K + (int(u) ^ (int(u) >> 16))) & MASK
    return h


def sha256_of(path: str) -> str:
    s = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            s.update(chunk)
    return s.hexdigest()


def write_digests() -> None:
    if not os.path.exists(MODEL):
        print(f"skipping the digests: {MODEL} is absent (scripts/fetch-model gemma3-270m)")
        return
    # The vectorised digest against the plain loop, on a size that crosses chunk edges.
    probe = np.random.default_rng(1).standard_normal(10007).astype(np.float32)
    assert digest(probe, chunk=1000) == digest_slow(probe)
    reader = gguf.GGUFReader(MODEL)
    lines = header("oracle: gguf.GGUFReader + gguf.quants.dequantize") + [
        f"# model: {os.path.basename(MODEL)} sha256 {sha256_of(MODEL)} bytes "
        f"{os.path.getsize(MODEL)}",
        "# digest: h = h * 0x9E3779B97F4A7C15 + (b ^ (b >> 16)) mod 2^64, b the bits of each f32",
        "# value in file order (see the script). Lines: <tensor> <type> <elements> <digest, hex>",
    ]
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        values = np.ascontiguousarray(values, dtype=np.float32)
        assert values.size == t.n_elements, t.name
        lines.append(f"{t.name} {t.tensor_type.name} {t.n_elements} {digest(values):016x}")
    path = os.path.join(GOLDEN_DIR, "gemma3_dequant_digests.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path} ({len(reader.tensors)} tensors)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks-only", action="store_true", help="skip the model digests")
    args = parser.parse_args()
    write_blocks()
    if not args.blocks_only:
        write_digests()


if __name__ == "__main__":
    main()
