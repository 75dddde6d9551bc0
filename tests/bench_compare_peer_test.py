#!/usr/bin/env python3
"""bench/compare's peer check (bench/compare_lib/peer.py, issue 16): a llama.cpp peer without an
ISA the machine has is refused, and the AVX2 pairing takes only an AVX2 peer without AVX-512.
Pure Python: the system-info strings are the ones llama-cpp-python 0.3.36 prints."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))

from compare_lib import peer  # noqa: E402  pylint: disable=wrong-import-position

NATIVE = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
          "AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | LLAMAFILE = 1 | "
          "OPENMP = 1 | REPACK = 1 |")
AVX2_ONLY = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
             "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |")
SSE_ONLY = "CPU : SSE3 = 1 | SSSE3 = 1 | LLAMAFILE = 1 |"
ZEN4 = ["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"]
HASWELL = ["avx2", "fma", "f16c"]


def peer_with(system_info):
    return {"version": "0.3.36", "path": "/x/llama_cpp", "system_info": system_info}


class PeerCheckTest(unittest.TestCase):
    def test_features_are_parsed(self):
        have = peer.features(NATIVE)
        self.assertEqual(have["AVX512"], 1)
        self.assertEqual(have["AVX2"], 1)
        self.assertNotIn("AVX512", peer.features(AVX2_ONLY))

    def test_machine_isas(self):
        self.assertEqual(peer.machine_isas(ZEN4), ["avx512", "avx2"])
        self.assertEqual(peer.machine_isas(HASWELL), ["avx2"])
        self.assertEqual(peer.machine_isas([]), [])

    def test_native_peer_is_fair_for_auto_and_avx512(self):
        self.assertEqual(peer.check(peer_with(NATIVE), "auto", ZEN4), "avx512")
        self.assertEqual(peer.check(peer_with(NATIVE), "avx512", ZEN4), "avx512")
        self.assertEqual(peer.check(peer_with(AVX2_ONLY), "auto", HASWELL), "avx2")

    def test_peer_without_avx512_on_an_avx512_machine_is_refused(self):
        with self.assertRaises(peer.PeerError) as e:
            peer.check(peer_with(AVX2_ONLY), "auto", ZEN4)
        self.assertIn("the machine has AVX-512 but the peer's system info shows no AVX512 = 1",
                      str(e.exception))
        with self.assertRaises(peer.PeerError) as e:
            peer.check(peer_with(AVX2_ONLY.replace("BMI2 = 1", "BMI2 = 1 | AVX512 = 0")),
                       "avx512", ZEN4)
        self.assertIn("the machine has AVX-512 but the peer's system info shows AVX512 = 0",
                      str(e.exception))

    def test_avx2_pairing_takes_only_an_avx2_peer(self):
        self.assertEqual(peer.check(peer_with(AVX2_ONLY), "avx2", ZEN4), "avx2")
        with self.assertRaises(peer.PeerError) as e:
            peer.check(peer_with(NATIVE), "avx2", ZEN4)
        self.assertIn("AVX512 = 1", str(e.exception))
        with self.assertRaises(peer.PeerError) as e:
            peer.check(peer_with(SSE_ONLY), "avx2", HASWELL)
        self.assertIn("AVX2, FMA, F16C", str(e.exception))

    def test_missing_peer_is_refused_with_the_build_command(self):
        with self.assertRaises(peer.PeerError) as e:
            peer.check(None, "auto", ZEN4)
        self.assertIn("GGML_NATIVE=ON", str(e.exception))


if __name__ == "__main__":
    unittest.main()
