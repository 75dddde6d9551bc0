// The normalised Walsh-Hadamard transform of x[0 … n − 1] (n ≤ HD), in place, as
// backends/cpu/hadamard.h defines it: n split by its binary digits into power-of-two blocks,
// largest first, each transformed with the same butterflies in the same order, so the sums
// round alike. A block of 2^k is scaled by the float nearest 1/√(2^k), from the table below
// (what the CPU's 1.0f / std::sqrt(float(2^k)) gives) rather than the device's sqrt.
const uint kHadamardNorms[9] = uint[](0x3F800000u, 0x3F3504F3u, 0x3F000000u, 0x3EB504F3u,
                                      0x3E800000u, 0x3E3504F3u, 0x3E000000u, 0x3DB504F3u,
                                      0x3D800000u);

void hadamard(inout float x[HD], uint n) {
  for (uint at = 0u; at < n;) {
    uint log2_block = uint(findMSB(n - at));
    uint block = 1u << log2_block;
    for (uint half_n = 1u; half_n < block; half_n *= 2u) {
      for (uint i = at; i < at + block; i += 2u * half_n) {
        for (uint j = i; j < i + half_n; ++j) {
          float a = x[j], b = x[j + half_n];
          x[j] = a + b;
          x[j + half_n] = a - b;
        }
      }
    }
    float norm = uintBitsToFloat(kHadamardNorms[log2_block]);
    for (uint i = at; i < at + block; ++i) x[i] *= norm;
    at += block;
  }
}
