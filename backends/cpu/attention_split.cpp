#include "backends/cpu/attention_split.h"

#include <cmath>

#include "backends/cpu/hadamard.h"
#include "contract/kv_policy.h"

namespace staticlm::cpu {

int64_t AttendedKeys(const OpParams& p, int64_t position) {
  const AttendedSpans span = Attended(p, position);
  const int64_t recent = position >= span.begin ? position - span.begin + 1 : 0;
  return span.sink_end + recent;
}

void MergeAttentionParts(const float* parts, int splits, int64_t head_dim, bool hadamard,
                         float* out) {
  const int64_t stride = AttentionPartFloats(head_dim);
  float largest = parts[0];
  for (int s = 1; s < splits; ++s) largest = std::fmax(largest, parts[s * stride]);
  float total = 0.0f;
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int s = 0; s < splits; ++s) {
    const float* part = parts + s * stride;
    const float weight = std::exp(part[0] - largest);
    total += weight * part[1];
    for (int64_t d = 0; d < head_dim; ++d) out[d] += weight * part[2 + d];
  }
  const float inv_total = 1.0f / total;
  for (int64_t d = 0; d < head_dim; ++d) out[d] *= inv_total;
  if (hadamard) Hadamard(out, head_dim);
}

}  // namespace staticlm::cpu
