#include "backends/cpu/hadamard.h"
#include "backends/cpu/reference_kernels.h"
#include "contract/kv_policy.h"

namespace staticlm::cpu::ref {

void Attention(const float* q, int64_t rows, int32_t first_position, const KvCacheView& cache,
               float* scores_all, float* out, int64_t head_begin, int64_t head_end) {
  const OpParams& p = cache.params;
  const int64_t hd = p.head_dim;
  const int64_t group = p.n_heads / p.n_kv_heads;
  const int64_t step_end = first_position + rows;
  float rotated[256];  // head_dim ≤ 256 (plan validation)
  float q_basis[256];
  // q8 caches hold Hadamard-rotated rows: the query goes into that basis, the output back.
  const bool hadamard = p.kv_quant == KvQuant::kQ8;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = first_position + r;
    const AttendedSpans span = Attended(p, position);
    for (int64_t h = head_begin; h < head_end; ++h) {
      float* scores = scores_all + h * p.cache_slots;
      const float* qh = q + (r * p.n_heads + h) * hd;
      const int64_t g = h / group;
      // Sinks are scored from the query's position inside the cache (StreamingLLM).
      if (span.sink_end > 0) {
        RotateQuery(qh, p, span.cache_position - position, cache.rope_factors, rotated);
        if (hadamard) Hadamard(rotated, hd);
      }
      if (hadamard) {
        for (int64_t d = 0; d < hd; ++d) q_basis[d] = qh[d];
        Hadamard(q_basis, hd);
        qh = q_basis;
      }
      int64_t n = 0;
      for (int64_t t = 0; t < span.sink_end; ++t) {
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) dot += rotated[d] * LoadKey(cache, step_end, t, g, d);
        scores[n++] = dot * p.scale;
      }
      for (int64_t t = span.begin; t <= position; ++t) {
        float dot = 0.0f;
        for (int64_t d = 0; d < hd; ++d) dot += qh[d] * LoadKey(cache, step_end, t, g, d);
        scores[n++] = dot * p.scale;
      }
      Softmax(scores, n);
      float* oh = out + (r * p.n_heads + h) * hd;
      for (int64_t d = 0; d < hd; ++d) oh[d] = 0.0f;
      n = 0;
      for (int64_t t = 0; t < span.sink_end; ++t, ++n) {
        for (int64_t d = 0; d < hd; ++d) oh[d] += scores[n] * LoadValue(cache, step_end, t, g, d);
      }
      for (int64_t t = span.begin; t <= position; ++t, ++n) {
        for (int64_t d = 0; d < hd; ++d) oh[d] += scores[n] * LoadValue(cache, step_end, t, g, d);
      }
      if (hadamard) Hadamard(oh, hd);
    }
  }
}

}  // namespace staticlm::cpu::ref
