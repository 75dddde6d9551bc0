// The plain read loop of the bench tools that time memory streaming (stream_jitter_bench,
// step_shape_bench): four independent sums over 64-bit words, so that the loads, not one add
// chain, set the pace.
#pragma once

#include <cstddef>
#include <cstdint>

namespace staticlm::bench {

inline uint64_t ReadWords(const uint64_t* w, size_t n) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    s0 += w[i];
    s1 += w[i + 1];
    s2 += w[i + 2];
    s3 += w[i + 3];
  }
  return s0 ^ s1 ^ s2 ^ s3;
}

}  // namespace staticlm::bench
