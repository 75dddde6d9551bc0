// The normalised Walsh-Hadamard transform of x[0 … n − 1] (n a power of two ≤ HD), in place:
// the butterflies of backends/cpu/hadamard.h in the same order, so the sums round alike; the
// factor 1/√n comes from the host (push constant fb) rather than the device's sqrt.
void hadamard(inout float x[HD], uint n) {
  for (uint half_n = 1u; half_n < n; half_n *= 2u) {
    for (uint i = 0u; i < n; i += 2u * half_n) {
      for (uint j = i; j < i + half_n; ++j) {
        float a = x[j], b = x[j + half_n];
        x[j] = a + b;
        x[j + half_n] = a - b;
      }
    }
  }
  for (uint i = 0u; i < n; ++i) x[i] *= pc.fb;
}
