#include "runtime/model/rope_scaling.h"

#include <algorithm>
#include <cmath>

namespace staticlm {
namespace {

// The pair index (fractional) whose wavelength fits `rotations` times into `context`.
double CorrectionDim(double rotations, int head_dim, double base, double context) {
  return head_dim * std::log(context / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
}

}  // namespace

std::vector<float> RopeScalingFactors(const RopeScaling& s, float rope_base, int head_dim) {
  const int pairs = head_dim / 2;
  std::vector<float> out(static_cast<size_t>(pairs), 1.0f);
  if (s.kind == RopeScalingKind::kLinear) {
    std::fill(out.begin(), out.end(), s.factor);
    return out;
  }
  if (s.kind != RopeScalingKind::kYarn) return out;
  const double context = s.original_context;
  double low = std::floor(CorrectionDim(s.beta_fast, head_dim, rope_base, context));
  double high = std::ceil(CorrectionDim(s.beta_slow, head_dim, rope_base, context));
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(head_dim - 1));
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  for (int i = 0; i < pairs; ++i) {
    // extrapolation: 1 keeps pair i's frequency (short wavelengths), 0 divides it by factor.
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;
    const double scale = (1.0 - extrapolation) / s.factor + extrapolation;
    out[static_cast<size_t>(i)] = static_cast<float>(1.0 / scale);
  }
  return out;
}

float YarnMagnitude(float factor, float mscale) {
  return factor <= 1.0f ? 1.0f
                        : static_cast<float>(0.1 * double(mscale) * std::log(double(factor)) + 1.0);
}

}  // namespace staticlm
