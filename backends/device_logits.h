// DeviceLogits: what a backend may do with a step's logits where it computed them, instead of
// writing them all to the host io buffer every step — keep them until asked for, and choose a
// token there. One concern of Backend; every call has a default for backends whose logits are
// always on the host (CPU).
#pragma once

#include <cmath>
#include <cstdint>

#include "platform/status.h"

namespace staticlm {

// A token choice a backend may make where the logits are (DeviceLogits::SampleOnDevice), with
// the semantics of runtime/sampler for the same parameters and no repetition penalty: greedy
// (the argmax, ties to the lowest id), or top-k with temperature (the k highest logits in
// descending order, ties to the lower id, weights w = e^((logit − best) / temperature)), then
// top-p (the shortest prefix whose weight reaches top_p · the k's total), then min-p (the
// candidates with w ≥ min_p), then the token whose cumulative weight in that order first
// exceeds uniform · the kept total. Top-p and min-p need 1 ≤ top_k < vocabulary (without top-k
// the host sampler measures top-p against the whole vocabulary's mass).
struct DeviceSampling {
  int32_t top_k = 0;         // 0: greedy; else 1 … DeviceLogits::max_device_top_k()
  float temperature = 1.0f;  // top-k: finite, > 0
  double uniform = 0.0;      // top-k: the caller's draw in [0, 1)
  float top_p = 1.0f;        // top-k: in (0, 1]; 1 → off
  float min_p = 0.0f;        // top-k: in [0, 1]; 0 → off
};

// Whether `s` is a request DeviceSampling describes for a row of `vocab` logits and a backend
// whose largest top_k is `max_top_k`; kInvalidArgument with a static message when not. Every
// backend's SampleOnDevice checks with it. Written so that NaN fails every check.
inline Status CheckDeviceSampling(const DeviceSampling& s, int32_t vocab, int32_t max_top_k) {
  auto invalid = [](const char* message) {
    return Status::Error(StatusCode::kInvalidArgument, "%s", message);
  };
  if (s.top_k < 0 || s.top_k > max_top_k || s.top_k > vocab) {
    return invalid("device sampling: top_k out of range");
  }
  if (s.top_k == 0) return Status::Ok();
  if (!(s.temperature > 0.0f) || std::isinf(s.temperature) ||
      !(s.uniform >= 0.0 && s.uniform < 1.0)) {
    return invalid("device sampling: needs a finite temperature > 0 and u in [0, 1)");
  }
  if (!(s.top_p > 0.0f && s.top_p <= 1.0f) || !(s.min_p >= 0.0f && s.min_p <= 1.0f)) {
    return invalid("device sampling: needs top_p in (0, 1] and min_p in [0, 1]");
  }
  if ((s.top_p < 1.0f || s.min_p > 0.0f) && s.top_k >= vocab) {
    return invalid("device sampling: top-p and min-p need top_k below the vocabulary");
  }
  return Status::Ok();
}

class DeviceLogits {
 public:
  virtual ~DeviceLogits() = default;
  // Run phase: true when the last Execute left its logits only in the backend's memory (see
  // BackendOptions::logits_on_request); the host io buffer's logits are stale until
  // FetchLogits.
  virtual bool logits_stay_on_device() const { return false; }
  // Run phase: copies rows [first_row, first_row + n_rows) of plan `plan_index`'s logits, as
  // its last Execute wrote them, to the host io buffer, where Execute would have put them.
  // Bounds are checked; no allocation. A backend whose logits are already there does nothing.
  virtual Status FetchLogits(int plan_index, int32_t first_row, int32_t n_rows) {
    (void)plan_index, (void)first_row, (void)n_rows;
    return Status::Ok();
  }
  // Run phase: the largest top_k SampleOnDevice takes; 0 when the backend does not sample.
  virtual int32_t max_device_top_k() const { return 0; }
  // Run phase: chooses a token from row `row` of the logits plan `plan_index` wrote in the last
  // Execute, where they are, and writes only its id to *token. Never allocates. Fails as the
  // host sampler does for NaN/+inf logits or all -inf (kInvalidArgument, same messages);
  // kUnsupported when the backend cannot (the default).
  virtual Status SampleOnDevice(int plan_index, int32_t row, const DeviceSampling& sampling,
                                int32_t* token) {
    (void)plan_index, (void)row, (void)sampling, (void)token;
    return Status::Error(StatusCode::kUnsupported, "this backend does not sample on its device");
  }
};

}  // namespace staticlm
