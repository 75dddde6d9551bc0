#!/usr/bin/env python3
"""Child process holding a transformers model (torch, CPU, float32) for bench/compare.

It lives in its own process so torch's OpenMP threads never share a process with llama.cpp's,
and so the parent can kill it if torch.compile takes unreasonably long.

Protocol: one JSON object per line. On start-up the worker loads the model from the GGUF file
and writes {"event": "ready", ...}. Then it reads requests from stdin:
  {"cmd": "generate", "mode": "nocache" | "dynamic" | "static", "max_new_tokens": N}
and answers each with {"ok": true, ...figures...} or {"ok": false, "error": "..."};
{"cmd": "quit"} ends it. Everything else the libraries print goes to stderr.
"""

import argparse
import json
import os
import sys
import time
import traceback

# The protocol owns the real stdout; anything printed (by Python or C) goes to stderr.
_PROTOCOL = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def send(obj):
    _PROTOCOL.write(json.dumps(obj) + "\n")
    _PROTOCOL.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--gguf", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--compile", type=int, default=1)
    args = parser.parse_args()

    start = time.perf_counter()
    import torch  # pylint: disable=import-outside-toplevel
    from transformers import (AutoModelForCausalLM, AutoTokenizer,  # pylint: disable=C0415
                              CompileConfig)
    from transformers.generation.streamers import BaseStreamer  # pylint: disable=C0415

    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, gguf_file=args.gguf,
                                                 dtype=torch.float32)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir, gguf_file=args.gguf)
    inputs = tokenizer(args.prompt, return_tensors="pt")
    load_s = time.perf_counter() - start

    class Clock(BaseStreamer):
        """Time stamps: the first put() is the prompt, then one per generated token."""

        def __init__(self):
            super().__init__()
            self.times = []

        def put(self, value):
            self.times.append(time.perf_counter())

        def end(self):
            pass

    compile_config = None
    if args.compile:
        # transformers compiles the forward automatically for a static cache, but only on
        # accelerators; this flag asks for it on the CPU too (the notebook ran on GPUs).
        compile_config = CompileConfig()
        compile_config._compile_all_devices = True  # pylint: disable=protected-access

    def generate(mode, max_new_tokens):
        kwargs = {"max_new_tokens": max_new_tokens, "do_sample": False,
                  "pad_token_id": tokenizer.eos_token_id}
        if mode == "nocache":
            kwargs["use_cache"] = False
        elif mode == "static":
            kwargs["cache_implementation"] = "static"
            if compile_config is not None:
                kwargs["compile_config"] = compile_config
        elif mode != "dynamic":
            raise ValueError("unknown mode " + mode)
        clock = Clock()
        begin = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**inputs, streamer=clock, **kwargs)
        total = time.perf_counter() - begin
        new = out[0, inputs["input_ids"].shape[1]:].tolist()
        n = len(new)
        stamps = clock.times[1:]
        decode_s = stamps[-1] - stamps[0] if len(stamps) > 1 else None
        return {"ok": True, "mode": mode, "tokens": new, "tokens_generated": n,
                "total_s": total,
                "first_token_s": stamps[0] - begin if stamps else None,
                "end_to_end_tokens_per_s": n / total,
                "decode_tokens_per_s": (n - 1) / decode_s if decode_s else None,
                "text": tokenizer.decode(new)}

    send({"event": "ready", "load_s": load_s,
          "prompt_ids": inputs["input_ids"][0].tolist(),
          "attn_implementation": model.config._attn_implementation,  # pylint: disable=W0212
          "torch_threads": torch.get_num_threads(), "compile": bool(args.compile),
          "compile_config": compile_config.to_dict() if compile_config else None})

    for line in sys.stdin:
        request = json.loads(line)
        if request.get("cmd") == "quit":
            break
        try:
            send(generate(request["mode"], int(request["max_new_tokens"])))
        except Exception as e:  # pylint: disable=broad-except
            traceback.print_exc()
            send({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})


if __name__ == "__main__":
    main()
