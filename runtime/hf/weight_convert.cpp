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
  return type == DType::kQ8_0 || type == DType::kQ4_0;
}

void QuantizeRow(DType type, const float* x, int64_t n, uint8_t* out) {
  const DTypeInfo info = GetDTypeInfo(type);
  for (int64_t b = 0; b < n / info.block_elements; ++b) {
    const float* block = x + b * info.block_elements;
    uint8_t* dst = out + b * info.block_bytes;
    if (type == DType::kQ8_0) QuantizeBlockQ8_0(block, dst);
    if (type == DType::kQ4_0) QuantizeBlockQ4_0(block, dst);
  }
}

}  // namespace staticlm::hf
