#!/usr/bin/env python3
"""bench/compare's bandwidth bound (bench/compare_lib/bound.py): the bound per depth from the
file's bytes, and the report paragraph with each side's share of the DRAM bound and, when
staticlm bench measured it, of the working-set bound. Pure Python, made-up figures."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))

from compare_lib import bound  # noqa: E402  pylint: disable=wrong-import-position

INFO = {"architecture": "llama", "layers": 2, "weights_bytes": 100_000_000,
        "embedding_bytes": 8_000_000, "embedding_type": "Q8_0",
        "embedding_shape": [1000, 64], "tied_head": True,
        "kv_bytes_per_position_per_layer": 1_000, "sliding_window": None,
        "sliding_pattern": None}


def part(working_set=None):
    by_depth = bound.bound(INFO, 10e9, [0, 1000])
    b = {"model": INFO, "threads": 2, "bandwidth_samples": [10e9],
         "by_depth": {str(d): v for d, v in by_depth.items()}}
    if working_set:
        ws = bound.bound(INFO, working_set, [0, 1000])
        b["working_set_bandwidth_samples"] = [working_set]
        b["working_set_by_depth"] = {str(d): v for d, v in ws.items()}
    return {"bandwidth_bound": b,
            "decode_medians": {"0": {"staticlm": 80.0, "llama.cpp": 40.0},
                               "1000": {"staticlm": 60.0, "llama.cpp": 30.0}}}


class BoundTest(unittest.TestCase):
    def test_bound_counts_weights_and_the_cache_attended(self):
        by_depth = bound.bound(INFO, 10e9, [0, 1000])
        self.assertEqual(by_depth[0]["bytes_per_token"], 100_000_000 + 2 * 1_000)
        self.assertEqual(by_depth[1000]["bytes_per_token"], 100_000_000 + 2 * 1001 * 1_000)
        self.assertAlmostEqual(by_depth[0]["tokens_per_s"], 10e9 / 100_002_000)

    def test_paragraph_gives_each_sides_share_of_the_dram_bound(self):
        text = bound.describe(part())
        # 10 GB/s over 100.002 MB is 99.998 tok/s: staticlm 80 %, llama.cpp 40 %.
        self.assertIn("depth 0: 100.0 MB per token -> 100.0 tok/s (staticlm 80 %, "
                      "llama.cpp 40 %)", text)
        self.assertNotIn("working set", text)

    def test_paragraph_adds_the_working_set_bound_when_measured(self):
        text = bound.describe(part(working_set=20e9))
        self.assertIn("Over a working set the model file's size", text)
        self.assertIn("20.0 GB/s", text)
        self.assertIn("depth 0: 100.0 MB per token -> 200.0 tok/s (staticlm 40 %, "
                      "llama.cpp 20 %)", text)

    def test_no_probe_says_why(self):
        self.assertEqual(bound.describe({"bandwidth_bound_skipped": "no bandwidth probe"}),
                         "Bandwidth bound: not measured (no bandwidth probe).")


if __name__ == "__main__":
    unittest.main()
