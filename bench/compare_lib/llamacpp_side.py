"""The llama.cpp side, through llama-cpp-python, measured the way `staticlm bench` measures.

* prefill: from an empty cache (`reset`), one timed `eval` of the prompt tokens.
* time to first token: that prefill plus the greedy choice of the first token.
* decode at depth d: reset, prefill d tokens (untimed), choose the next token greedily, then
  `gen` single-token `eval` calls, each timed together with the greedy choice of the next token
  (argmax of the last logits, lowest id on ties), feeding the chosen token back. At depth 0 the
  first step evaluates the sequence's first token. Speed = steps / sum of step times.

With logits_all=False, llama-cpp-python 0.3.36 no longer copies logits into `Llama.scores`, so
the logits are read straight from llama.cpp (`llama_get_logits_ith(ctx, -1)`) without a copy.
The timed steps include llama-cpp-python's Python overhead per `eval` (batch set-up, a
KV-cache trim call), a few tens of microseconds.
"""

import time

import numpy as np


def _devices(llama_cpp):
    """The ggml backend devices llama.cpp sees, e.g. "Vulkan0 (llvmpipe …)"."""
    try:
        names = []
        for i in range(llama_cpp.ggml_backend_dev_count()):
            dev = llama_cpp.ggml_backend_dev_get(i)
            names.append("%s (%s)" % (llama_cpp.ggml_backend_dev_name(dev).decode(),
                                      llama_cpp.ggml_backend_dev_description(dev).decode()))
        return ", ".join(names)
    except (AttributeError, OSError):  # older bindings: no device listing
        return "?"


class LlamaCpp:
    def __init__(self, model, threads, ctx, n_batch=512, n_gpu_layers=0):
        import llama_cpp  # pylint: disable=import-outside-toplevel
        self._llama_cpp = llama_cpp
        start = time.perf_counter()
        self.llm = llama_cpp.Llama(model_path=model, n_ctx=ctx, n_threads=threads,
                                   n_threads_batch=threads, n_batch=n_batch, logits_all=False,
                                   n_gpu_layers=n_gpu_layers, verbose=False)
        self.init_ms = (time.perf_counter() - start) * 1e3
        self.n_vocab = self.llm.n_vocab()
        self.settings = {"n_ctx": ctx, "n_threads": threads, "n_threads_batch": threads,
                         "n_batch": n_batch, "logits_all": False, "n_gpu_layers": n_gpu_layers,
                         "devices": _devices(llama_cpp) if n_gpu_layers else "cpu",
                         "flash_attn": bool(getattr(self.llm.context_params, "flash_attn_type", 0)
                                            == 1)}

    def close(self):
        self.llm.close()

    def tokenize(self, text):
        """(ids, has_bos): ids as llama.cpp tokenizes `text` (BOS only if the model adds it)."""
        with_special = self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        plain = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        return with_special, len(with_special) == len(plain) + 1

    def _argmax(self):
        ptr = self._llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return int(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).argmax())

    def prefill(self, tokens):
        """(tokens/s of the prefill, time to first token in ms)."""
        self.llm.reset()
        start = time.perf_counter()
        self.llm.eval(tokens)
        # A GPU backend (Vulkan) may still be computing when eval returns: wait for it.
        self._llama_cpp.llama_synchronize(self.llm.ctx)
        prefilled = time.perf_counter()
        self._argmax()
        first = time.perf_counter()
        return len(tokens) / (prefilled - start), (first - start) * 1e3

    def decode(self, tokens, depth, gen):
        """(tokens/s, per-step latencies in ms) of `gen` greedy steps after `depth` tokens."""
        self.llm.reset()
        if depth > 0:
            self.llm.eval(tokens[:depth])
            token = self._argmax()
        else:
            token = tokens[0]
        latencies = []
        for _ in range(gen):
            start = time.perf_counter()
            self.llm.eval([token])
            token = self._argmax()
            latencies.append(time.perf_counter() - start)
        return gen / sum(latencies), [t * 1e3 for t in latencies]

    def warm_up(self, tokens):
        """Untimed pass so the first measured round does not pay for first-touch page faults."""
        self.prefill(tokens[: min(len(tokens), 512)])
        self.decode(tokens, 0, 8)

    def round(self, tokens, prefill_sizes, depths, gen):
        """Every figure once -> dict like Staticlm.bench's."""
        prefill, ttft = {}, None
        for size in prefill_sizes:
            tps, ms = self.prefill(tokens[:size])
            prefill[size] = tps
            if ttft is None:
                ttft = ms
        decode, latencies = {}, {}
        for depth in depths:
            decode[depth], latencies[depth] = self.decode(tokens, depth, gen)
        return {"prefill_tokens_per_s_by_size": prefill, "ttft_ms": ttft,
                "decode_tokens_per_s_by_depth": decode, "decode_latency_ms_by_depth": latencies}
