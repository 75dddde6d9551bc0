"""staticlm.Model: one context of the C API. Buffers the calls write into are made once here,
so generating reuses them; the C library itself allocates nothing after init."""

import ctypes

import numpy as np

from ._capi import KV_TYPES, ChatMessage, Limits, Memory, ModelInfo, Sampler, lib
from .errors import StaticlmError

_PIECE_BYTES = 256  # one token's text; the C API says 64 suffices for SmolLM2


class Model:
    """A model loaded for generation.

    ctx: cache positions (prompt + generated tokens); backend: "cpu", "vulkan" or "auto";
    threads: worker threads; kv_type: "f16", "f32", "q8" or "q4"; max_prompt_bytes: longest
    prompt text; chat_format: None (the model's template), "chatml" or "gemma".
    """

    def __init__(self, path, ctx=2048, backend="cpu", threads=1, kv_type="f16",
                 max_prompt_bytes=16384, chat_format=None):
        self._ctx = None  # before anything can fail: __del__ looks at it
        limits = Limits()
        lib.staticlm_limits_default(ctypes.byref(limits))
        limits.max_context = ctx
        limits.threads = threads
        limits.max_prompt_bytes = max_prompt_bytes
        limits.backend = backend.encode()
        if kv_type not in KV_TYPES:
            raise ValueError(f"kv_type must be one of {sorted(KV_TYPES)}")
        limits.kv_type = KV_TYPES[kv_type]
        error = ctypes.create_string_buffer(512)
        handle = ctypes.c_void_p()
        status = lib.staticlm_create(str(path).encode(), ctypes.byref(limits),
                                     ctypes.byref(handle), error, len(error))
        if status != 0:
            raise StaticlmError(status, error.value.decode(errors="replace"))
        self._ctx = handle
        self.path = str(path)
        self.limits = limits
        self._tokens = (ctypes.c_int32 * max(max_prompt_bytes, ctx))()
        self._text = ctypes.create_string_buffer(max_prompt_bytes)
        self._piece = ctypes.create_string_buffer(_PIECE_BYTES)
        self.info = ModelInfo()
        lib.staticlm_get_model_info(self._ctx, ctypes.byref(self.info))
        if chat_format is not None:
            self._check(lib.staticlm_set_chat_format(self._ctx, chat_format.encode()))

    def close(self):
        """Frees the context (also done when the object is collected)."""
        if self._ctx is not None:
            lib.staticlm_destroy(self._ctx)
            self._ctx = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, status):
        if status != 0:
            raise StaticlmError(status, lib.staticlm_last_error(self._ctx).decode())

    # ---- tokens and text ----------------------------------------------------------------

    def tokenize(self, text, special=False):
        """Token ids of `text` (BOS first when the model's file says so). special: special
        tokens written in the text ("<|im_start|>") become single tokens."""
        data = text.encode()
        n = ctypes.c_size_t()
        self._check(lib.staticlm_tokenize(self._ctx, data, len(data), int(special),
                                          self._tokens, len(self._tokens), ctypes.byref(n)))
        return list(self._tokens[:n.value])

    def _piece_text(self, token):
        n = ctypes.c_size_t()
        self._check(lib.staticlm_token_to_text(self._ctx, token, self._piece, _PIECE_BYTES,
                                               ctypes.byref(n)))
        return self._piece.raw[:n.value]

    def _flush(self):
        return self._piece.raw[:lib.staticlm_flush_text(self._ctx, self._piece, _PIECE_BYTES)]

    def detokenize(self, tokens):
        """The text of `tokens`, as generation streams it. Forgets any text a generation left
        held back."""
        self._flush()
        data = b"".join(self._piece_text(t) for t in tokens) + self._flush()
        return data.decode(errors="replace")

    def format_chat(self, messages, add_generation_prompt=True):
        """The prompt text of `messages` ([{"role": ..., "content": ...}]) in the model's
        chat format."""
        array = (ChatMessage * len(messages))(*[
            ChatMessage(m["role"].encode(), m["content"].encode()) for m in messages])
        n = ctypes.c_size_t()
        self._check(lib.staticlm_format_chat(self._ctx, array, len(messages),
                                             int(add_generation_prompt), 0, self._text,
                                             len(self._text), ctypes.byref(n)))
        return self._text.raw[:n.value].decode()

    # ---- generation ---------------------------------------------------------------------

    def prefill(self, tokens):
        """Appends `tokens` to the conversation and computes the last one's logits."""
        array = (ctypes.c_int32 * len(tokens))(*tokens)
        self._check(lib.staticlm_prefill(self._ctx, array, len(tokens)))

    def decode(self, token):
        self._check(lib.staticlm_decode(self._ctx, token))

    def reset(self):
        """Forgets the conversation (position 0)."""
        lib.staticlm_reset(self._ctx)

    @property
    def position(self):
        return lib.staticlm_position(self._ctx)

    @property
    def logits(self):
        """The last token's logits as a read-only NumPy view of the context's buffer (no copy):
        valid until the next prefill, decode or reset. None before any."""
        pointer = lib.staticlm_logits(self._ctx)
        if not pointer:
            return None
        view = np.ctypeslib.as_array(pointer, shape=(self.info.vocab_size,))
        view.flags.writeable = False
        return view

    def generate(self, prompt, max_tokens=128, temperature=0.8, top_k=40, top_p=0.95,
                 seed=0, min_p=0.05, repetition_penalty=1.0, special=False, reset=True):
        """Streams the text pieces generated after `prompt` (a string, or a list of token ids),
        as `staticlm run` does: at most max_tokens tokens, stopping at the end of generation.
        temperature 0 is greedy. reset=False continues the conversation in the cache."""
        sampler = Sampler()
        lib.staticlm_sampler_default(ctypes.byref(sampler))
        sampler.temperature, sampler.top_k, sampler.top_p = temperature, top_k, top_p
        sampler.min_p, sampler.repetition_penalty = min_p, repetition_penalty
        tokens = prompt if isinstance(prompt, list) else self.tokenize(prompt, special)
        if reset:
            self.reset()
        lib.staticlm_seed(self._ctx, seed)
        if tokens:
            self.prefill(tokens)
        return self._stream(sampler, max_tokens)

    def _stream(self, sampler, max_tokens):
        token = ctypes.c_int32()
        for i in range(max_tokens):
            self._check(lib.staticlm_sample(self._ctx, ctypes.byref(sampler),
                                            ctypes.byref(token)))
            if lib.staticlm_is_end_of_generation(self._ctx, token.value):
                break
            piece = self._piece_text(token.value)
            if piece:
                yield piece.decode()
            if i + 1 == max_tokens:
                break  # the last token's logits are not needed
            status = lib.staticlm_decode(self._ctx, token.value)
            if status == 6:  # STATICLM_CONTEXT_FULL: the text so far is the answer
                break
            self._check(status)
        rest = self._flush()
        if rest:
            yield rest.decode()

    def chat(self, messages, stream=False, **sampling):
        """The assistant's reply to `messages` ([{"role": "user", "content": ...}, ...]),
        rendered with the model's chat format; the keyword arguments are generate()'s.
        stream=True returns generate()'s iterator of pieces instead of the whole text."""
        pieces = self.generate(self.format_chat(messages), special=True, **sampling)
        return pieces if stream else "".join(pieces)

    # ---- facts ----------------------------------------------------------------------------

    @property
    def backend(self):
        return lib.staticlm_backend_name(self._ctx).decode()

    def memory(self):
        """The bytes the context holds, by kind (staticlm_memory's fields)."""
        memory = Memory()
        lib.staticlm_get_memory(self._ctx, ctypes.byref(memory))
        return {name: getattr(memory, name) for name, _ in Memory._fields_}

    def bench(self, prompt_tokens=64, gen_tokens=32, reps=3):
        """Measures time to first token, prefill and decode speed (see bench.py)."""
        from .bench import run_bench
        return run_bench(self, prompt_tokens, gen_tokens, reps)
