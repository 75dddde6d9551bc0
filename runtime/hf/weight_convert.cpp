#include "runtime/hf/weight_convert.h"

#include <cmath>
#include <cstring>

#include "backends/cpu/half.h"

namespace staticlm::hf {
namespace {

void StoreHalf(float v, uint8_t* out) {
  const uint16_t h = cpu::FloatToHalf(v);
  std::memcpy(out, &h, 2);
}

// Q8_0: d = max|x| / 127, q = round(x / d) (half away from zero), as ggml's reference.
void QuantizeBlockQ8_0(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreHalf(d, out);
  for (int j = 0; j < 32; ++j)
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
}

// Q4_0: d = (the value of largest magnitude) / −8, q = min(15, trunc(x / d + 8.5)).
void QuantizeBlockQ4_0(const float* x, uint8_t* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  StoreHalf(d, out);
  for (int j = 0; j < 16; ++j) {
    const int lo = static_cast<int8_t>(x[j] * id + 8.5f),
              hi = static_cast<int8_t>(x[16 + j] * id + 8.5f);
    out[2 + j] = static_cast<uint8_t>((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
  }
}

int Clamp(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Q4_K (dtype.h): per 32-value sub-block a scale (max − min) / 15 and a min (−min, with the
// minimum taken with 0, as the format's minimums are subtracted), both as 6-bit multiples of
// the super-block's f16 d and dmin; each value the nearest 4-bit code under the rounded scale
// and min actually stored. Simpler than ggml's iterative search, so its bytes differ from
// llama-quantize's; its values decode within a code step of the input.
void QuantizeBlockQ4K(const float* x, uint8_t* out) {
  float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < 8; ++s) {
    float lo = 0.0f, hi = 0.0f;
    for (int k = 0; k < 32; ++k) {
      lo = std::fmin(lo, x[32 * s + k]);
      hi = std::fmax(hi, x[32 * s + k]);
    }
    scale[s] = (hi - lo) / 15.0f;
    min[s] = -lo;
    max_scale = std::fmax(max_scale, scale[s]);
    max_min = std::fmax(max_min, min[s]);
  }
  StoreHalf(max_scale / 63.0f, out);
  StoreHalf(max_min / 63.0f, out + 2);
  uint16_t bits = 0;
  std::memcpy(&bits, out, 2);
  const float d = cpu::HalfToFloat(bits);
  std::memcpy(&bits, out + 2, 2);
  const float dmin = cpu::HalfToFloat(bits);
  uint8_t* scales = out + 4;
  uint8_t* qs = out + 16;
  std::memset(scales, 0, 12);
  for (int s = 0; s < 8; ++s) {
    const int sc = d > 0.0f ? Clamp(static_cast<int>(std::lround(scale[s] / d)), 0, 63) : 0;
    const int m = dmin > 0.0f ? Clamp(static_cast<int>(std::lround(min[s] / dmin)), 0, 63) : 0;
    if (s < 4) {
      scales[s] |= static_cast<uint8_t>(sc);
      scales[s + 4] |= static_cast<uint8_t>(m);
    } else {
      scales[s + 4] = static_cast<uint8_t>((sc & 15) | (m & 15) << 4);
      scales[s - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
      scales[s] |= static_cast<uint8_t>((m >> 4) << 6);
    }
    const float step = d * static_cast<float>(sc), offset = dmin * static_cast<float>(m);
    for (int k = 0; k < 32; ++k) {
      const int q =
          step > 0.0f ? Clamp(static_cast<int>(std::lround((x[32 * s + k] + offset) / step)), 0, 15)
                      : 0;
      uint8_t& byte = qs[32 * (s / 2) + k];
      byte = s % 2 == 0 ? static_cast<uint8_t>((byte & 0xF0) | q)
                        : static_cast<uint8_t>((byte & 0x0F) | q << 4);
    }
  }
}

}  // namespace

void ToF32(DType type, const uint8_t* in, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    if (type == DType::kF32) {
      std::memcpy(&out[i], in + 4 * i, 4);
      continue;
    }
    uint16_t h = 0;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = type == DType::kF16 ? cpu::HalfToFloat(h) : cpu::BFloat16ToFloat(h);
  }
}

bool CanQuantizeTo(DType type) {
  return type == DType::kQ8_0 || type == DType::kQ4_0 || type == DType::kQ4_K;
}

void QuantizeRow(DType type, const float* x, int64_t n, uint8_t* out) {
  const DTypeInfo info = GetDTypeInfo(type);
  for (int64_t b = 0; b < n / info.block_elements; ++b) {
    const float* block = x + b * info.block_elements;
    uint8_t* dst = out + b * info.block_bytes;
    if (type == DType::kQ8_0) QuantizeBlockQ8_0(block, dst);
    if (type == DType::kQ4_0) QuantizeBlockQ4_0(block, dst);
    if (type == DType::kQ4_K) QuantizeBlockQ4K(block, dst);
  }
}

}  // namespace staticlm::hf
