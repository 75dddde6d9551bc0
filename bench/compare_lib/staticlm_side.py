"""The staticlm side: runs the built `staticlm` CLI and reads its JSON.

`staticlm bench --json` (schema staticlm-bench/1, bench/README.md) gives prefill and per-depth
decode speed; `staticlm run --json` gives one generation (the transformers experiment).
"""

import json
import os
import subprocess
import tempfile
import time


class StaticlmError(RuntimeError):
    pass


def _run(cmd, timeout):
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise StaticlmError("timed out after %ds: %s" % (timeout, " ".join(cmd))) from e
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise StaticlmError("exit %d: %s\n%s" % (proc.returncode, " ".join(cmd),
                                                 proc.stderr.strip()[-2000:]))
    return proc, wall


def check_binary(path):
    """Fails with a hint to build it when the CLI is missing or has no `bench` command."""
    if not os.access(path, os.X_OK):
        raise StaticlmError(
            "no staticlm CLI at %s; build it: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && "
            "cmake --build build -j2 --target staticlm_cli (or pass --staticlm PATH)" % path)
    proc = subprocess.run([path, "bench", "--reps", "0"], capture_output=True, text=True,
                          timeout=60, check=False)
    if "unknown command" in proc.stderr:
        raise StaticlmError("%s has no `bench` command: rebuild it from this tree" % path)


class Staticlm:
    """Runs one configuration of the CLI (model, threads, context)."""

    def __init__(self, binary, model, threads, ctx, extra_args=()):
        self.binary = binary
        self.model = model
        self.threads = threads
        self.ctx = ctx
        self.extra_args = list(extra_args)

    def _common(self):
        return ["--model", self.model, "--threads", str(self.threads), *self.extra_args]

    def bench(self, prompt_tokens, depths, gen_tokens, warmup=1, timeout=1800, probe=False):
        """One `staticlm bench` invocation (`warmup` reps, 1 measured rep) -> figures dict.

        probe: also run its read-bandwidth probe (default buffer size; otherwise skipped)."""
        with tempfile.TemporaryDirectory(prefix="staticlm-compare-") as tmp:
            out = os.path.join(tmp, "bench.json")
            cmd = [self.binary, "bench", *self._common(), "--ctx", str(self.ctx),
                   "--prompt-tokens", str(prompt_tokens),
                   "--depths", ",".join(str(d) for d in depths),
                   "--gen-tokens", str(gen_tokens), "--reps", "1", "--warmup", str(warmup),
                   *([] if probe else ["--probe-mib", "0"]), "--json", out]
            _, wall = _run(cmd, timeout)
            with open(out, encoding="utf-8") as f:
                report = json.load(f)
        by_depth = report.get("decode_tokens_per_s_by_depth") or {}
        samples = report.get("decode_latency_samples_ms") or {}
        return {
            "command": " ".join(cmd[:-1] + ["FILE"]),
            "wall_s": wall,
            "prefill_tokens_per_s": report.get("prefill_tokens_per_s"),
            "ttft_ms": report.get("ttft_ms"),
            "init_ms": report.get("init_ms"),
            "decode_tokens_per_s_by_depth": {int(k): v for k, v in by_depth.items()},
            # The measured rep's per-step decode latencies, as llama.cpp's side records them.
            "decode_latency_ms_by_depth": {int(k): v[-1] for k, v in samples.items() if v},
            "peak_rss_bytes": report.get("peak_rss_bytes"),
            "heap_allocs_after_init": report.get("heap_allocs_after_init"),
            "read_bandwidth_bytes_per_s": report.get("read_bandwidth_bytes_per_s"),
            "bytes_read_per_decode_step": report.get("bytes_read_per_decode_step"),
            "noise_spread_before": ((report.get("noise") or {}).get("before") or {}).get("spread"),
            "noise_spread_after": ((report.get("noise") or {}).get("after") or {}).get("spread"),
            "backend": report.get("backend"),
            "staticlm_version": report.get("staticlm_version"),
            "config": report.get("config"),
        }

    def run(self, prompt, max_tokens, timeout=600):
        """One greedy `staticlm run --json` generation -> figures dict.

        The CLI stops at an end-of-generation token; `tokens_generated` says how many tokens
        were actually produced and every rate is per token actually produced.
        """
        cmd = [self.binary, "run", *self._common(), "--json", "--prompt", prompt,
               "--max-tokens", str(max_tokens), "--temperature", "0"]
        proc, wall = _run(cmd, timeout)
        report = json.loads(proc.stdout)
        n_prompt = len(report["prompt_tokens"])
        n_gen = len(report["tokens"])
        # generation.cpp decodes every generated token but the last one when the budget is
        # reached; when it stops early (end of generation), every generated token was decoded.
        decode_steps = n_gen - 1 if n_gen == max_tokens else n_gen
        prefill_tps = report["prefill_tokens_per_s"]
        decode_tps = report["decode_tokens_per_s"]
        prefill_s = n_prompt / prefill_tps if prefill_tps else 0.0
        decode_s = decode_steps / decode_tps if decode_tps else 0.0
        gen_s = prefill_s + decode_s
        return {
            "command": " ".join(cmd),
            "wall_s": wall,
            "prompt_tokens": report["prompt_tokens"],
            "tokens": report["tokens"],
            "text": report["text"],
            "tokens_generated": n_gen,
            "stopped_early": n_gen < max_tokens,
            "prefill_tokens_per_s": prefill_tps,
            "decode_tokens_per_s": decode_tps,
            "generation_s": gen_s,
            "end_to_end_tokens_per_s": n_gen / gen_s if gen_s else None,
            "peak_rss_bytes": report.get("peak_rss_bytes"),
            "heap_allocs_after_init": report.get("heap_allocs_after_init"),
        }

    def tokenize(self, text):
        """The ids `staticlm run` prefills for `text` (used to check both sides agree)."""
        cmd = [self.binary, "run", "--model", self.model, "--json", "--prompt", text,
               "--max-tokens", "1", "--temperature", "0", "--ctx", str(self.ctx)]
        proc, _ = _run(cmd, 300)
        return json.loads(proc.stdout)["prompt_tokens"]
