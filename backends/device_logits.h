// DeviceLogits: what a backend may do with a step's logits where it computed them, instead of
// writing them all to the host io buffer every step — keep them until asked for, and choose a
// token there. One concern of Backend; every call has a default for backends whose logits are
// always on the host (CPU).
#pragma once

#include <cstdint>

#include "platform/status.h"

namespace staticlm {

// A token choice a backend may make where the logits are (DeviceLogits::SampleOnDevice), with
// the semantics of runtime/sampler for the same parameters and no repetition penalty, top-p or
// min-p: greedy (the argmax, ties to the lowest id), or top-k with temperature (the k highest
// logits, ties to the lower id, softmax of logit / temperature over them, the token whose
// cumulative weight in descending order first exceeds uniform · total).
struct DeviceSampling {
  int32_t top_k = 0;         // 0: greedy; else 1 … DeviceLogits::max_device_top_k()
  float temperature = 1.0f;  // top-k: finite, > 0
  double uniform = 0.0;      // top-k: the caller's draw in [0, 1)
};

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
