"""Helpers the golden scripts share: a file's sha256, a GGUF's keys copied, and a GGUF copy with
f32 tensors.

The f32 copy lets llama.cpp run a model's exact weights without quantizing activations (a
matrix product of f32 weights takes f32 inputs), which is how the scripts tell what llama.cpp's
quantized arithmetic changes from what the model is.
"""

import hashlib

import gguf
import numpy as np


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def copy_keys(reader, writer):
    """Every metadata key of `reader` (a GGUFReader) into `writer`, with its own type, except
    the ones the writer makes itself (the header's and general.architecture)."""
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), field.types[0], sub_type=sub_type)


def write_f32_gguf(src, dst):
    """Copies the GGUF with every tensor dequantized to f32 by the gguf package."""
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, arch=reader.fields["general.architecture"].contents())
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = 0 if key == "general.file_type" else field.contents()  # 0 = all f32
        sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, field.types[0], sub_type=sub_type)
    for tensor in reader.tensors:
        data = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        writer.add_tensor(tensor.name, data.reshape([int(d) for d in reversed(tensor.shape)]))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
