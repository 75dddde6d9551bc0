// What the C API's source files share: the context behind the opaque handle, and how a Status
// becomes a staticlm_status (kept as the context's last error).
#pragma once

#include "platform/status.h"
#include "runtime/engine/engine.h"
#include "runtime/sampler/sampler.h"
#include "staticlm/staticlm.h"

struct staticlm_context {
  staticlm::Engine engine;
  staticlm::Status last;
};

namespace staticlm::capi {

inline staticlm_status ToC(StatusCode code) {
  return static_cast<staticlm_status>(static_cast<int>(code));
}

inline staticlm_status Record(staticlm_context* c, const Status& s) {
  c->last = s;
  return ToC(s.code());
}

// A NULL the call cannot work with (include/staticlm/staticlm.h, "NULL arguments"): recorded
// as the context's last error. `what` names the parameter.
inline staticlm_status NullArgument(staticlm_context* c, const char* what) {
  return Record(c, Status::Error(StatusCode::kInvalidArgument, "%s is NULL", what));
}

inline SamplerParams ToSamplerParams(const staticlm_sampler& sampler) {
  SamplerParams p;
  p.temperature = sampler.temperature;
  p.top_k = sampler.top_k;
  p.top_p = sampler.top_p;
  p.min_p = sampler.min_p;
  p.repetition_penalty = sampler.repetition_penalty;
  p.repetition_window = sampler.repetition_window;
  return p;
}

}  // namespace staticlm::capi
