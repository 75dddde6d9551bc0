"""ctypes declarations of the C API (include/staticlm/staticlm.h) and the loading of
libstaticlm.so. Structures mirror the header field by field; keep them in its order."""

import ctypes
import os
from ctypes import POINTER, c_char_p, c_double, c_float, c_int, c_int32, c_size_t, c_uint32
from ctypes import c_uint64, c_void_p
from pathlib import Path

STATUS_NAMES = {
    0: "ok", 1: "invalid argument", 2: "io error", 3: "format error", 4: "unsupported",
    5: "out of memory", 6: "context full", 7: "invalid state", 8: "internal",
}
KV_TYPES = {"f16": 0, "f32": 1, "q8": 2, "q4": 3}


class Limits(ctypes.Structure):
    _fields_ = [
        ("max_context", c_int32), ("max_batch", c_int32), ("prefill_chunk", c_int32),
        ("max_prompt_bytes", c_int32), ("kv_type", c_int), ("threads", c_int32),
        ("reference_kernels", c_int32), ("busy_wait", c_int32), ("pin_threads", c_int32),
        ("lock_memory", c_int32), ("plan_path", c_char_p), ("disabled_fusions", c_uint32),
        ("backend", c_char_p), ("device", c_int32), ("window", c_int32), ("sinks", c_int32),
        ("global_every", c_int32), ("max_snapshots", c_int32),
        ("pipeline_cache_path", c_char_p), ("activation_bits", c_int32),
        ("quantize", c_char_p), ("isa", c_char_p), ("profile_ops", c_int32),
        ("huge_pages", c_int32),
    ]


class Sampler(ctypes.Structure):
    _fields_ = [
        ("temperature", c_float), ("top_k", c_int32), ("top_p", c_float), ("min_p", c_float),
        ("repetition_penalty", c_float), ("repetition_window", c_int32),
    ]


class ModelInfo(ctypes.Structure):
    _fields_ = [(name, c_int32) for name in (
        "n_layers", "width", "n_heads", "n_kv_heads", "head_dim", "ffn_width", "vocab_size",
        "context_length")] + [("rope_base", c_float), ("rms_eps", c_float), ("add_bos", c_int32)]


class Memory(ctypes.Structure):
    _fields_ = [(name, c_uint64) for name in (
        "weights_bytes", "kv_cache_bytes", "arena_bytes", "io_bytes", "host_bytes",
        "total_bytes", "arena_lower_bound_bytes", "arena_naive_bytes", "snapshot_bytes",
        "kv_ring_bytes", "kv_global_bytes", "kv_all_global_bytes")]


class ChatMessage(ctypes.Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


class StepCost(ctypes.Structure):
    _fields_ = [(name, c_uint64) for name in (
        "weight_bytes", "kv_cache_bytes", "activation_bytes", "bytes_read", "bytes_written",
        "total_bytes", "flops")]


_ctx = c_void_p
_PROTOTYPES = {
    # name: (result type, argument types)
    "staticlm_limits_default": (None, [POINTER(Limits)]),
    "staticlm_sampler_default": (None, [POINTER(Sampler)]),
    "staticlm_create": (c_int, [c_char_p, POINTER(Limits), POINTER(_ctx), c_char_p, c_size_t]),
    "staticlm_destroy": (None, [_ctx]),
    "staticlm_last_error": (c_char_p, [_ctx]),
    "staticlm_get_memory": (None, [_ctx, POINTER(Memory)]),
    "staticlm_get_model_info": (None, [_ctx, POINTER(ModelInfo)]),
    "staticlm_tokenize": (c_int, [_ctx, c_char_p, c_size_t, c_int, POINTER(c_int32), c_size_t,
                                  POINTER(c_size_t)]),
    "staticlm_format_chat": (c_int, [_ctx, POINTER(ChatMessage), c_size_t, c_int, c_int,
                                     c_char_p, c_size_t, POINTER(c_size_t)]),
    "staticlm_set_chat_format": (c_int, [_ctx, c_char_p]),
    "staticlm_prefill": (c_int, [_ctx, POINTER(c_int32), c_size_t]),
    "staticlm_decode": (c_int, [_ctx, c_int32]),
    "staticlm_logits": (POINTER(c_float), [_ctx]),
    "staticlm_seed": (None, [_ctx, c_uint64]),
    "staticlm_sample": (c_int, [_ctx, POINTER(Sampler), POINTER(c_int32)]),
    "staticlm_is_end_of_generation": (c_int, [_ctx, c_int32]),
    "staticlm_token_to_text": (c_int, [_ctx, c_int32, c_char_p, c_size_t, POINTER(c_size_t)]),
    "staticlm_flush_text": (c_size_t, [_ctx, c_char_p, c_size_t]),
    "staticlm_reset": (None, [_ctx]),
    "staticlm_position": (c_int32, [_ctx]),
    "staticlm_step_cost_get": (None, [_ctx, c_int32, c_int32, POINTER(StepCost)]),
    "staticlm_backend_name": (c_char_p, [_ctx]),
    "staticlm_backend_description": (c_char_p, [_ctx]),
    "staticlm_init_notes": (c_char_p, [_ctx]),
    "staticlm_sync_seconds": (c_double, [_ctx]),
    "staticlm_reset_sync_seconds": (None, [_ctx]),
    "staticlm_version": (c_char_p, []),
}


def _library_path():
    """STATICLM_LIBRARY when set (a build tree's libstaticlm.so), else the copy installed
    inside this package by `pip install`."""
    override = os.environ.get("STATICLM_LIBRARY")
    if override:
        return override
    return str(Path(__file__).resolve().parent / "lib" / "libstaticlm.so.0")


def load():
    lib = ctypes.CDLL(_library_path())
    for name, (restype, argtypes) in _PROTOTYPES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


lib = load()
