// Rng: the sampler's random source, xoshiro256** seeded through splitmix64. Our own generator
// rather than std:: distributions, whose output is implementation-defined, so the same seed
// gives the same tokens with every standard library. Never allocates.
#pragma once

#include <cstdint>

namespace staticlm {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { Seed(seed); }

  // Expands one 64-bit seed into the 256-bit state with splitmix64, which never yields the
  // all-zero state xoshiro cannot leave.
  void Seed(uint64_t seed) {
    for (uint64_t& word : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }

  uint64_t Next() {
    const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = RotateLeft(state_[3], 45);
    return result;
  }

  // The whole state, so a saved session continues the same random sequence.
  static constexpr int kStateWords = 4;
  void GetState(uint64_t out[kStateWords]) const {
    for (int i = 0; i < kStateWords; ++i) out[i] = state_[i];
  }
  // Returns false, leaving the state as it was, for the all-zero state xoshiro cannot leave.
  bool SetState(const uint64_t in[kStateWords]) {
    if ((in[0] | in[1] | in[2] | in[3]) == 0) return false;
    for (int i = 0; i < kStateWords; ++i) state_[i] = in[i];
    return true;
  }

  // Uniform in [0, 1): the top 53 bits, exactly representable in a double.
  double NextUnit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t state_[4];
};

}  // namespace staticlm
