#include "runtime/session/cache_regions.h"

#include <cmath>
#include <cstring>

namespace staticlm {
namespace {

bool IsCacheTensorName(const char* name) {
  size_t n = strnlen(name, sizeof(TensorRegion::name));
  const char* k = ".cache_k";
  const char* v = ".cache_v";
  return n > 8 && (std::strcmp(name + n - 8, k) == 0 || std::strcmp(name + n - 8, v) == 0);
}

// An F16 value's exponent bits all set: infinity or NaN. Every finite F16 is within
// CacheRegions::kMaxCachedMagnitude.
bool HalfFinite(uint16_t h) {
  return (h & 0x7C00u) != 0x7C00u;
}

bool FloatAcceptable(float x) {
  return std::isfinite(x) && std::fabs(x) <= CacheRegions::kMaxCachedMagnitude;
}

}  // namespace

// A [batch · heads, capacity, head_dim] F16/F32 cache tensor, described by head rows.
bool CacheRegions::AddPrefixTensor(const TensorRegion& t) {
  if (!IsCacheTensorName(t.name) || t.rank != 3 ||
      (t.dtype != DType::kF16 && t.dtype != DType::kF32) || t.shape[1] != capacity_ ||
      t.shape[0] <= 0 || t.shape[0] % batch_ != 0 || t.shape[2] <= 0) {
    return false;
  }
  uint64_t slot = DTypeBytes(t.dtype, static_cast<uint64_t>(t.shape[2]));
  if (slot_bytes_ != 0 && slot != slot_bytes_) return false;
  slot_bytes_ = slot;
  Tensor& x = tensors_[n_tensors_ - 1];
  x.row_bytes = slot * static_cast<uint64_t>(capacity_);
  x.slot_bytes = slot;
  x.heads = t.shape[0] / batch_;
  heads_total_ += x.heads;
  return true;
}

Status CacheRegions::Init(const Plan& plan, uint64_t kv_bytes, bool static_policy) {
  *this = CacheRegions();
  kv_bytes_ = kv_bytes;
  capacity_ = plan.limits.max_context;
  batch_ = plan.limits.max_batch;
  prefix_ = static_policy;
  for (const TensorRegion& t : plan.tensors) {
    if (t.buffer != BufferId::kKvCache) continue;
    bool listed = false;
    for (int i = 0; i < n_tensors_; ++i) listed = listed || tensors_[i].offset == t.offset;
    if (listed) continue;
    if (n_tensors_ == kMaxTensors || t.offset + t.bytes() > kv_bytes) {
      return Status::Error(StatusCode::kUnsupported, "the KV cache has too many tensors");
    }
    tensors_[n_tensors_++] = {
        t.offset, t.bytes() / static_cast<uint64_t>(batch_), 0, 0, 0, t.bytes(), t.dtype};
    // Any tensor a prefix copy would miss (scales beside quantized keys, an unexpected shape)
    // makes the copies whole parts.
    prefix_ = prefix_ && AddPrefixTensor(t);
  }
  whole_ = !prefix_ && batch_ == 1;
  return Status::Ok();
}

uint64_t CacheRegions::StoredBytes(int64_t position) const {
  if (prefix_) {
    return static_cast<uint64_t>(heads_total_) * static_cast<uint64_t>(position) * slot_bytes_;
  }
  if (whole_) return kv_bytes_;
  uint64_t bytes = 0;
  for (int t = 0; t < n_tensors_; ++t) bytes += tensors_[t].part_bytes;
  return bytes;
}

size_t CacheRegions::RegionCount() const {
  if (whole_) return 1;
  return prefix_ ? static_cast<size_t>(heads_total_) : static_cast<size_t>(n_tensors_);
}

KvRegion CacheRegions::Region(size_t i, int64_t position, int32_t sequence) const {
  if (whole_) return {0, kv_bytes_};
  const uint64_t s = static_cast<uint64_t>(sequence);
  if (!prefix_) {
    const Tensor& x = tensors_[i];
    return {x.offset + s * x.part_bytes, x.part_bytes};
  }
  for (int t = 0; t < n_tensors_; ++t) {
    const Tensor& x = tensors_[t];
    if (i < static_cast<size_t>(x.heads)) {
      return {x.offset + s * x.part_bytes + i * x.row_bytes,
              static_cast<uint64_t>(position) * x.slot_bytes};
    }
    i -= static_cast<size_t>(x.heads);
  }
  return {};
}

Status CacheRegions::CheckValues(uint64_t offset, const uint8_t* bytes, size_t n) const {
  for (int t = 0; t < n_tensors_; ++t) {
    const Tensor& x = tensors_[t];
    if (x.dtype != DType::kF16 && x.dtype != DType::kF32) continue;
    const uint64_t element = x.dtype == DType::kF16 ? 2 : 4;
    // Whole elements of tensor t inside [offset, offset + n), as buffer offsets.
    uint64_t begin = offset > x.offset ? offset : x.offset;
    uint64_t end = offset + n < x.offset + x.bytes ? offset + n : x.offset + x.bytes;
    begin = x.offset + (begin - x.offset + element - 1) / element * element;
    for (uint64_t at = begin; at + element <= end; at += element) {
      const uint8_t* p = bytes + (at - offset);
      bool ok;
      if (x.dtype == DType::kF16) {
        uint16_t h;
        std::memcpy(&h, p, sizeof(h));
        ok = HalfFinite(h);
      } else {
        float f;
        std::memcpy(&f, p, sizeof(f));
        ok = FloatAcceptable(f);
      }
      if (!ok) {
        return Status::Error(StatusCode::kFormatError,
                             "its cache holds a value that is not finite or beyond 1e8");
      }
    }
  }
  return Status::Ok();
}

}  // namespace staticlm
