#include "runtime/session/cache_regions.h"

#include <cstring>

namespace staticlm {
namespace {

bool IsCacheTensorName(const char* name) {
  size_t n = strnlen(name, sizeof(TensorRegion::name));
  const char* k = ".cache_k";
  const char* v = ".cache_v";
  return n > 8 && (std::strcmp(name + n - 8, k) == 0 || std::strcmp(name + n - 8, v) == 0);
}

}  // namespace

bool CacheRegions::AddTensor(const TensorRegion& t, int64_t capacity) {
  if (!IsCacheTensorName(t.name) || t.rank != 3 ||
      (t.dtype != DType::kF16 && t.dtype != DType::kF32) || t.shape[1] != capacity ||
      t.shape[0] <= 0 || t.shape[2] <= 0) {
    return false;
  }
  for (int i = 0; i < n_tensors_; ++i) {
    if (tensors_[i].offset == t.offset) return true;  // the same tensor listed again
  }
  if (n_tensors_ == kMaxTensors) return false;
  uint64_t slot = DTypeBytes(t.dtype, static_cast<uint64_t>(t.shape[2]));
  if (slot_bytes_ != 0 && slot != slot_bytes_) return false;
  slot_bytes_ = slot;
  tensors_[n_tensors_++] = {t.offset, slot * static_cast<uint64_t>(capacity), slot, t.shape[0]};
  heads_total_ += t.shape[0];
  return t.offset + t.bytes() <= kv_bytes_;
}

void CacheRegions::Init(const Plan& plan, uint64_t kv_bytes, bool static_policy) {
  *this = CacheRegions();
  kv_bytes_ = kv_bytes;
  capacity_ = plan.limits.max_context;
  if (!static_policy) return;
  // Any tensor in the buffer this layout cannot describe (scales beside quantized keys, an
  // unexpected shape) would be missed by a prefix copy: then the whole buffer is copied.
  for (const TensorRegion& t : plan.tensors) {
    if (t.buffer != BufferId::kKvCache) continue;
    if (!AddTensor(t, capacity_)) {
      n_tensors_ = 0;
      return;
    }
  }
}

uint64_t CacheRegions::StoredBytes(int64_t position) const {
  if (!prefix()) return kv_bytes_;
  return static_cast<uint64_t>(heads_total_) * static_cast<uint64_t>(position) * slot_bytes_;
}

size_t CacheRegions::RegionCount() const {
  return prefix() ? static_cast<size_t>(heads_total_) : 1;
}

KvRegion CacheRegions::Region(size_t i, int64_t position) const {
  if (!prefix()) return {0, kv_bytes_};
  for (int t = 0; t < n_tensors_; ++t) {
    const Tensor& x = tensors_[t];
    if (i < static_cast<size_t>(x.heads)) {
      return {x.offset + i * x.row_bytes, static_cast<uint64_t>(position) * x.slot_bytes};
    }
    i -= static_cast<size_t>(x.heads);
  }
  return {};
}

}  // namespace staticlm
