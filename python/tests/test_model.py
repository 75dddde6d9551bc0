"""The Python package against the CLI (an independent user of the C API) and the C API's own
contracts: greedy text, chat, tokens, the logits view, errors and bench figures."""

import json
import subprocess

import numpy as np
import pytest

import staticlm


def run_cli(cli, model_path, prompt, max_tokens, *flags):
    out = subprocess.run([str(cli), "run", "--model", str(model_path), "-p", prompt, "-n",
                          str(max_tokens), "--temperature", "0", "--json", *flags],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.mark.parametrize("prompt", ["The capital of France is", "Once upon a time"])
def test_greedy_text_equals_cli(model, cli, model_path, prompt):
    expected = run_cli(cli, model_path, prompt, 8)
    pieces = list(model.generate(prompt, max_tokens=8, temperature=0))
    assert "".join(pieces) == expected["text"]
    assert len(pieces) > 1  # streamed piece by piece, not in one block
    assert model.tokenize(prompt) == expected["prompt_tokens"]


def test_chat_equals_cli_chat(model, cli, model_path):
    question = "What is the capital of France?"
    expected = run_cli(cli, model_path, question, 24, "--chat")
    reply = model.chat([{"role": "user", "content": question}], max_tokens=24, temperature=0)
    assert reply == expected["text"]
    streamed = model.chat([{"role": "user", "content": question}], stream=True,
                          max_tokens=24, temperature=0)
    assert "".join(streamed) == reply


def test_seeded_sampling_repeats(model):
    first = "".join(model.generate("Tell me a story", max_tokens=16, temperature=1.0, seed=7))
    again = "".join(model.generate("Tell me a story", max_tokens=16, temperature=1.0, seed=7))
    assert first == again


def test_tokenize_round_trip(model):
    text = "Static memory: nothing allocated after init. Ünïcödé, 東京, 🙂!"
    tokens = model.tokenize(text)
    assert all(0 <= t < model.info.vocab_size for t in tokens)
    assert model.detokenize(tokens) == text
    assert model.tokenize("<|im_start|>", special=True) != model.tokenize("<|im_start|>")


def test_logits_are_a_view_without_copy(model):
    model.reset()
    assert model.logits is None
    model.prefill(model.tokenize("The capital of France is"))
    logits = model.logits
    pointer = staticlm._capi.lib.staticlm_logits(model._ctx)
    assert logits.ctypes.data == staticlm._capi.ctypes.addressof(pointer.contents)
    assert not logits.flags.owndata and not logits.flags.writeable
    assert logits.shape == (model.info.vocab_size,) and logits.dtype == np.float32
    assert np.shares_memory(logits, model.logits)
    # The next token is the argmax; after decoding it the same view shows the new logits.
    before = logits.copy()
    model.decode(int(np.argmax(before)))
    assert np.shares_memory(logits, model.logits)
    assert not np.array_equal(before, logits)


def test_errors_carry_the_c_api_message(model, model_path, tmp_path):
    with pytest.raises(staticlm.StaticlmError) as missing:
        staticlm.Model(tmp_path / "missing.gguf")
    assert "missing.gguf" in str(missing.value) and missing.value.status == 2
    with pytest.raises(staticlm.StaticlmError) as bad_backend:
        staticlm.Model(model_path, backend="no-such-backend")
    assert bad_backend.value.status == 1 and bad_backend.value.message
    with pytest.raises(staticlm.StaticlmError) as bad_token:
        model.reset()
        model.prefill([model.info.vocab_size])
    assert bad_token.value.message == staticlm._capi.lib.staticlm_last_error(
        model._ctx).decode()
    with pytest.raises(staticlm.StaticlmError) as init_error:
        staticlm.Model(model_path, ctx=16)  # smaller than the default prefill chunk (64)
    assert "exceeds the context 16" in init_error.value.message


def test_prompt_over_the_context_is_context_full(model_path):
    with staticlm.Model(model_path, ctx=64) as small:
        with pytest.raises(staticlm.StaticlmError) as too_long:
            small.generate("word " * 100, max_tokens=4)
        assert too_long.value.status == 6  # STATICLM_CONTEXT_FULL
        assert too_long.value.message == staticlm._capi.lib.staticlm_last_error(
            small._ctx).decode()
        assert small.position == 0  # the cache is unchanged
        assert "".join(small.generate("word", max_tokens=2, temperature=0))


def test_bench_returns_figures(model):
    figures = model.bench(prompt_tokens=16, gen_tokens=4, reps=2)
    json.dumps(figures)  # plain JSON values
    assert figures["backend"] == "cpu"
    assert figures["prefill_tokens_per_s"] > 0 and figures["decode_tokens_per_s"] > 0
    assert figures["decode_latency_ms"]["count"] == 8
    assert figures["ttft_ms_best"] <= figures["ttft_ms"]
    assert figures["decode_tokens_per_s_by_depth"]["16"] == figures["decode_tokens_per_s"]
    assert figures["bytes_read_per_decode_step"]["16"] > 0
    assert figures["sync_ms_per_token"] >= 0 and len(figures["reps"]) == 2
    assert figures["memory"]["total_bytes"] > figures["memory"]["kv_cache_bytes"] > 0
