// Writes a matmul invocation's sums (COLS columns from o0, RT rows from r0, nr of them real)
// in the fused form MODE selects: 0 y0; 1 y1 and silu(gate)·y1 into y0; 2 y0 and acc += y0.
// Bindings b2 (y0) and b3 (y1 or acc), word offsets base2 / base3; push constant d the outputs'
// row stride (a, the columns this dispatch computes, is less when a weight too large for one
// binding is split over several dispatches). Shared by the matmul shaders.

float silu(float g) { return g / (1.0 + exp(-g)); }

void store_outputs(uint o0, uint r0, uint nr, float acc0[COLS][RT], float acc1[COLS][RT]) {
  // Constant bounds throughout: a dynamic index would move the sums to (slow) private memory.
  [[unroll]] for (uint c = 0u; c < COLS; ++c) {
    uint o = o0 + c;
    if (o >= pc.a) break;
    [[unroll]] for (uint r = 0u; r < RT; ++r) {
      if (r >= nr) break;
      uint yi = (r0 + r) * pc.d + o;
#if MODE == 1
      b3[pc.base3 + yi] = floatBitsToUint(acc1[c][r]);
      b2[pc.base2 + yi] = floatBitsToUint(silu(acc0[c][r]) * acc1[c][r]);
#else
      b2[pc.base2 + yi] = floatBitsToUint(acc0[c][r]);
#endif
#if MODE == 2
      b3[pc.base3 + yi] = floatBitsToUint(uintBitsToFloat(b3[pc.base3 + yi]) + acc0[c][r]);
#endif
    }
  }
}
