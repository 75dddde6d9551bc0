// Helpers for the Vulkan tests: one-op plans built by hand, run on the CPU reference backend
// (the oracle) and on the Vulkan backend with the validation layer on.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/half.h"
#include "contract/plan.h"

namespace staticlm::vktest {

// A plan under construction with its four host buffers.
struct PlanHarness {
  Plan plan;
  std::vector<uint8_t> bytes[kBufferCount];

  explicit PlanHarness(int32_t chunk, int32_t max_context = 64) {
    plan.limits.prefill_chunk = chunk;
    plan.limits.max_context = max_context;
    plan.tokens_tensor = Tensor(BufferId::kIo, DType::kI32, {chunk}, "tokens");
    plan.logits_tensor = Tensor(BufferId::kIo, DType::kF32, {1, 8}, "logits");
  }

  uint32_t Tensor(BufferId buffer, DType dtype, std::vector<int64_t> shape, const char* name) {
    TensorRegion t;
    t.buffer = buffer;
    t.dtype = dtype;
    t.rank = static_cast<uint32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
    std::snprintf(t.name, sizeof(t.name), "%s", name);
    uint64_t& end = plan.buffer_bytes[static_cast<int>(buffer)];
    // Weights start 4 bytes past a 64-byte boundary, so the backend's aligned-down bindings
    // (and the word offsets in its push constants) are exercised.
    t.offset = (end + 63) / 64 * 64 + (buffer == BufferId::kWeights ? 4 : 0);
    end = t.offset + t.bytes();
    plan.tensors.push_back(t);
    return static_cast<uint32_t>(plan.tensors.size() - 1);
  }

  void AddOp(OpKind kind, std::vector<uint32_t> in, std::vector<uint32_t> out, OpParams p) {
    Op op;
    op.kind = kind;
    op.n_inputs = static_cast<uint8_t>(in.size());
    op.n_outputs = static_cast<uint8_t>(out.size());
    for (size_t i = 0; i < in.size(); ++i) op.inputs[i] = in[i];
    for (size_t i = 0; i < out.size(); ++i) op.outputs[i] = out[i];
    op.params = p;
    plan.ops.push_back(op);
  }

  // Sizes the host buffers once every tensor is added.
  void Allocate() {
    for (int b = 0; b < kBufferCount; ++b) bytes[b].assign(plan.buffer_bytes[b] + 64, 0);
  }

  uint8_t* Data(uint32_t tensor) {
    const TensorRegion& t = plan.tensors[tensor];
    return bytes[static_cast<int>(t.buffer)].data() + t.offset;
  }

  BufferBinding Binding() {
    BufferBinding b;
    for (int i = 0; i < kBufferCount; ++i) {
      b.data[i] = bytes[i].data();
      b.bytes[i] = plan.buffer_bytes[i];
    }
    return b;
  }
};

inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Random but valid weight bytes of `type` for `elements` values (finite scales and halves).
inline std::vector<uint8_t> RandomWeights(DType type, uint64_t elements, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> small(-0.1f, 0.1f);
  std::vector<uint8_t> out(DTypeBytes(type, elements));
  auto put_half = [&](size_t at, float v) {
    uint16_t h = cpu::FloatToHalf(v);
    std::memcpy(&out[at], &h, 2);
  };
  DTypeInfo info = GetDTypeInfo(type);
  for (uint64_t b = 0; b < elements / info.block_elements; ++b) {
    size_t at = b * info.block_bytes;
    switch (type) {
      case DType::kF32: {
        float v = small(rng) * 10.0f;
        std::memcpy(&out[at], &v, 4);
        break;
      }
      case DType::kF16:
        put_half(at, small(rng) * 10.0f);
        break;
      case DType::kBF16: {
        float v = small(rng) * 10.0f;
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        uint16_t h = static_cast<uint16_t>(bits >> 16);
        std::memcpy(&out[at], &h, 2);
        break;
      }
      case DType::kQ5_0:
      case DType::kQ5_1:
      case DType::kQ4_K:
      case DType::kQ5_K:
      case DType::kQ6_K: {
        // Random quants, then finite f16 scales where the layout keeps them (dtype.h): d first
        // (Q6_K: last), and m or dmin after it for Q5_1, Q4_K and Q5_K. The K-quants' super-
        // scales are smaller: they multiply 6-bit (Q6_K: int8) sub-block scales.
        for (size_t i = at; i < at + info.block_bytes; ++i) out[i] = uint8_t(rng());
        const bool k_quant = type == DType::kQ4_K || type == DType::kQ5_K || type == DType::kQ6_K;
        const float s = k_quant ? 1.0f / 32 : 1.0f;
        put_half(type == DType::kQ6_K ? at + 208 : at, small(rng) * s);
        if (type == DType::kQ5_1 || type == DType::kQ4_K || type == DType::kQ5_K) {
          put_half(at + 2, small(rng) * s);
        }
        break;
      }
      default: {
        put_half(at, small(rng));
        size_t q = 2;
        if (type == DType::kQ4_1) {
          put_half(at + 2, small(rng));
          q = 4;
        }
        for (size_t i = at + q; i < at + info.block_bytes; ++i) out[i] = uint8_t(rng());
      }
    }
  }
  return out;
}

inline void PutFloats(PlanHarness& h, uint32_t tensor, const std::vector<float>& v) {
  std::memcpy(h.Data(tensor), v.data(), v.size() * sizeof(float));
}

// The bytes of every buffer after running `steps` on a backend.
struct RunResult {
  Status status;
  std::vector<uint8_t> bytes[kBufferCount];
  std::vector<std::vector<uint8_t>> arena_after_step;  // the arena after each step
};

// Runs the harness's plan on `backend`: Prepare, upload the arena and cache contents the
// harness holds (through WriteBuffer, as a device backend keeps them), each step, read back.
inline RunResult RunPlan(Backend& backend, const PlanHarness& source,
                         const std::vector<StepParams>& steps) {
  RunResult r;
  PlanHarness h = source;  // each backend gets its own host memory
  const Plan* plans[1] = {&h.plan};
  r.status = backend.Prepare(plans, 1, h.Binding());
  if (!r.status.ok()) return r;
  for (BufferId id : {BufferId::kKvCache, BufferId::kArena}) {
    int i = static_cast<int>(id);
    std::vector<uint8_t> copy = h.bytes[i];
    r.status = backend.WriteBuffer(id, 0, h.plan.buffer_bytes[i], copy.data());
    if (!r.status.ok()) return r;
  }
  const int arena = static_cast<int>(BufferId::kArena);
  for (const StepParams& s : steps) {
    r.status = backend.Execute(0, s);
    if (!r.status.ok()) return r;
    r.arena_after_step.emplace_back(h.plan.buffer_bytes[arena], 0);
    r.status = backend.ReadBuffer(BufferId::kArena, 0, h.plan.buffer_bytes[arena],
                                  r.arena_after_step.back().data());
    if (!r.status.ok()) return r;
  }
  for (BufferId id : {BufferId::kKvCache, BufferId::kArena, BufferId::kIo}) {
    int i = static_cast<int>(id);
    r.bytes[i].assign(h.plan.buffer_bytes[i], 0);
    r.status = backend.ReadBuffer(id, 0, h.plan.buffer_bytes[i], r.bytes[i].data());
    if (!r.status.ok()) return r;
  }
  return r;
}

// The f32 values of `tensor` (F32 or F16) in a run's buffers, first `rows` rows.
// n values at p, F16 or else F32, as floats.
inline std::vector<float> DecodeFloats(const uint8_t* p, DType dtype, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::kF16) {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * i, 2);
      v[size_t(i)] = cpu::HalfToFloat(bits);
    } else {
      std::memcpy(&v[size_t(i)], p + 4 * i, 4);
    }
  }
  return v;
}

inline std::vector<float> Values(const PlanHarness& h, const RunResult& r, uint32_t tensor,
                                 int64_t rows = -1) {
  const TensorRegion& t = h.plan.tensors[tensor];
  int64_t n = rows < 0 ? t.elements() : rows * t.shape[1];
  return DecodeFloats(r.bytes[static_cast<int>(t.buffer)].data() + t.offset, t.dtype, n);
}

}  // namespace staticlm::vktest
