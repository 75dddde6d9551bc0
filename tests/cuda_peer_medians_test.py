#!/usr/bin/env python3
"""bench/cuda_peer_medians.py (issue 15's CUDA peer): both sides reduced to the median over every
round — llama.cpp's per-repetition tok/s (llama-bench -o json's samples_ts), staticlm's
per-run medians — matched by model, kind and depth, with the peer's build printed. Pure Python:
the log below has the shape scripts/cuda-device-check writes, llama-bench's JSON fields as
llama-cpp-python 0.3.36's llama.cpp prints them and `staticlm bench`'s text as it prints it."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))

import cuda_peer_medians  # noqa: E402  pylint: disable=wrong-import-position


def llama_json(pp, tg0, tg1024):
    def test(n_prompt, n_gen, depth, samples):
        return ('  {\n    "build_commit": "abc1234",\n    "build_number": 7000,\n'
                '    "gpu_info": "NVIDIA H200",\n    "backends": "CUDA",\n'
                '    "type_k": "f16",\n    "type_v": "f16",\n    "flash_attn": "auto",\n'
                '    "n_prompt": %d,\n    "n_gen": %d,\n    "n_depth": %d,\n'
                '    "samples_ns": [ 1, 2, 3 ],\n    "samples_ts": [ %s ]\n  }'
                % (n_prompt, n_gen, depth, samples and ", ".join(str(s) for s in samples)))
    return "[\n%s\n]\n" % ",\n".join([test(512, 0, 0, pp), test(0, 128, 0, tg0),
                                      test(0, 128, 1024, tg1024)])


def staticlm_text(prefill, d0, d1024):
    return ("staticlm bench 0.1.0\n"
            "                           median       best\n"
            "prefill                    %.1f     %.1f  tok/s\n"
            "sync (waiting)              1.541             ms/token\n\n"
            "decode      tok/s     tok/s   bytes/step   implied     bound   %% of\n"
            "  depth    median      best        (MiB)      GB/s     tok/s  bound\n"
            "  0         %.1f     999.9       236.45    176.43         -      -\n"
            "  1024      %.1f     999.9       246.93    146.19         -      -\n\n"
            "decode latency (ms)   min      p50      p90      p99      max    stdev\n"
            "  d=0         1.305    1.403    1.450    1.472    1.533    0.035\n"
            % (prefill, prefill + 1, d0, d1024))


class CudaPeerMediansTest(unittest.TestCase):
    def run_on(self, log):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(log)
        out = io.StringIO()
        try:
            with redirect_stdout(out):
                self.assertEqual(cuda_peer_medians.main(f.name), 0)
        finally:
            os.unlink(f.name)
        return out.getvalue()

    def test_medians_over_rounds_and_ratio(self):
        # Skewed samples, so that a mean would differ from the median on both sides.
        log = ("llama-cpp-python 0.3.36 (llama.cpp b7000), CUDA 90\n"
               "== round 1 llama.cpp m.gguf\n" + llama_json([1000, 1100, 1900], [500, 510, 590],
                                                             [400, 400, 460]) + "exit 0\n"
               "== round 1 staticlm m.gguf\n" + staticlm_text(2000, 700, 600) + "exit 0\n"
               "== round 2 llama.cpp m.gguf\n" + llama_json([1300, 1400, 1500], [530, 540, 550],
                                                             [400, 400, 400]) + "exit 0\n"
               "== round 2 staticlm m.gguf\n" + staticlm_text(2200, 720, 640) + "exit 0\n"
               "== round 3 staticlm m.gguf\n" + staticlm_text(2900, 900, 700) + "exit 0\n")
        out = self.run_on(log)
        self.assertIn("peer bundle: llama-cpp-python 0.3.36 (llama.cpp b7000), CUDA 90", out)
        self.assertIn("llama.cpp build 7000 (abc1234), CUDA, NVIDIA H200", out)
        rows = {tuple(line.split()[1:3]): line.split() for line in out.splitlines()
                if line.startswith("m.gguf")}
        # prefill: staticlm's median of 2000, 2200, 2900; llama.cpp's of its six samples.
        self.assertEqual(rows[("prefill", "0")][3:6], ["2200.0", "1350.0", "1.63x"])
        self.assertEqual(rows[("decode", "0")][3:6], ["720.0", "535.0", "1.35x"])
        self.assertEqual(rows[("decode", "1024")][3:6], ["640.0", "400.0", "1.60x"])

    def test_a_peer_that_ran_on_the_cpu_is_left_out(self):
        log = ("== round 1 llama.cpp m.gguf\n"
               + llama_json([1000], [500], [400]).replace('"NVIDIA H200"', '""') + "exit 0\n"
               "== round 1 staticlm m.gguf\n" + staticlm_text(2000, 700, 600) + "exit 0\n")
        out = self.run_on(log)
        self.assertIn("CUDA, no GPU, ", out)
        self.assertIn("ran on the CPU, its figures left out", out)
        self.assertNotIn("m.gguf", out)

    def test_a_side_without_figures_is_left_out(self):
        log = ("== round 1 llama.cpp m.gguf\nerror: no device\nexit 1\n"
               "== round 1 staticlm m.gguf\n" + staticlm_text(2000, 700, 600) + "exit 0\n")
        out = self.run_on(log)
        self.assertNotIn("m.gguf", out)


if __name__ == "__main__":
    unittest.main()
