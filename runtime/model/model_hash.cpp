#include "runtime/model/model_hash.h"

#include <cstring>

namespace staticlm {
namespace {

// Four independent lanes of multiply-rotate mixing so the loop is limited by memory, not by a
// dependency chain; the lanes are folded together at the end.
constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;

inline uint64_t Rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

inline uint64_t Mix(uint64_t lane, uint64_t word) {
  lane += word * kPrime2;
  lane = Rotl(lane, 31);
  return lane * kPrime1;
}

inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime1;
  h ^= h >> 32;
  return h;
}

}  // namespace

uint64_t FingerprintBytes(const uint8_t* data, size_t size) {
  uint64_t lanes[4] = {kPrime1, kPrime2, ~kPrime1, ~kPrime2};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int l = 0; l < 4; ++l) {
      uint64_t word;
      std::memcpy(&word, data + i + 8 * l, 8);
      lanes[l] = Mix(lanes[l], word);
    }
  }
  uint64_t h = static_cast<uint64_t>(size) * kPrime1;
  for (uint64_t lane : lanes) h = Mix(h, lane);
  for (; i < size; ++i) h = Mix(h, data[i]);
  return Avalanche(h);
}

}  // namespace staticlm
