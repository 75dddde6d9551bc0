#version 450
// y (rows, n_out) = x (rows, n_in) · wᵀ for CPU devices such as lavapipe, where a storage load
// is a loop over the SIMD lanes (so its cost is per load instruction, not per byte): the same
// MODEs, bindings and output as matmul.comp's column-per-invocation style, with two changes
// that cut the loads per weight by 3–6× (docs/vulkan.md):
//   - weights are read a unit (one or two blocks, or a K-quant super-block in steps of two
//     sub-blocks) at a time with uvec4 loads (shaders/weight_units.glsl);
//   - each x block is loaded once per subgroup, one uvec4 per lane, and handed to every lane
//     with subgroupBroadcast (a register move on a CPU device) instead of 32 loads per lane.
// Needs a subgroup of exactly 8 invocations with every lane active (columns past n_out are
// computed on a clamped row and not stored), scalar block layout, x rows 16-byte aligned and
// n_in a multiple of the unit (vk_dispatch.cpp picks this shader only then).
// Push constants: base0 in uvec4s, base1/base4 in units, base2/base3 in words; a n_out, b n_in.
#include "common.glsl"
#extension GL_EXT_scalar_block_layout : enable
#extension GL_KHR_shader_subgroup_ballot : enable
#include "weight_units.glsl"

#define RT uint(ROWS)
#define COLS 4u
#define WG 8  // one subgroup (kUnitsGroup in vk_dispatch.cpp)
layout(local_size_x = WG) in;

layout(std430, set = 0, binding = 0) readonly buffer XRows { uvec4 x4[]; };
layout(scalar, set = 0, binding = 1) readonly buffer W0Units { WUnit w0u[]; };
layout(scalar, set = 0, binding = 4) readonly buffer W1Units { WUnit w1u[]; };
#include "matmul_store.glsl"

// Block `blk` (32 values) of x row `row`: lane i loads the i-th uvec4, the subgroup shares them.
void x_block(uint row, uint blk, out float xs[32]) {
  uvec4 mine = x4[pc.base0 + row * (pc.b >> 2) + blk * 8u + (gl_SubgroupInvocationID & 7u)];
#define SHARE(k)                                 \
  {                                              \
    uvec4 t = subgroupBroadcast(mine, k);        \
    xs[4u * k] = uintBitsToFloat(t.x);           \
    xs[4u * k + 1u] = uintBitsToFloat(t.y);      \
    xs[4u * k + 2u] = uintBitsToFloat(t.z);      \
    xs[4u * k + 3u] = uintBitsToFloat(t.w);      \
  }
  SHARE(0u) SHARE(1u) SHARE(2u) SHARE(3u) SHARE(4u) SHARE(5u) SHARE(6u) SHARE(7u)
#undef SHARE
}

void main() {
  uint o0 = gl_GlobalInvocationID.x * COLS;
  uint rows = active_rows();
  uint r0 = gl_WorkGroupID.y * RT;
  if (r0 >= rows) return;  // the whole workgroup: the subgroups stay full
  uint nr = min(RT, rows - r0);
  float acc0[COLS][RT], acc1[COLS][RT];
  [[unroll]] for (uint c = 0u; c < COLS; ++c) {
    [[unroll]] for (uint r = 0u; r < RT; ++r) {
      acc0[c][r] = 0.0;
      acc1[c][r] = 0.0;
    }
  }
  uint units = pc.b / (32u * UNIT_BLOCKS);
  // A loop over steps, not unrolled within a unit: a K-quant unit's four steps unrolled would
  // make a shader too large to compile in reasonable memory.
  for (uint st = 0u; st < units * UNIT_STEPS; ++st) {
    uint u = st / UNIT_STEPS, t = st % UNIT_STEPS;
    // x first (every block of the step, every row of the tile), then one column at a time:
    // the step's words stay live only while their column is summed.
    float xs[STEP_BLOCKS][RT][32];
    [[unroll]] for (uint b = 0u; b < STEP_BLOCKS; ++b) {
      [[unroll]] for (uint r = 0u; r < RT; ++r) {
        x_block(r0 + min(r, nr - 1u), st * STEP_BLOCKS + b, xs[b][r]);
      }
    }
    [[unroll]] for (uint c = 0u; c < COLS; ++c) {
      uint row = min(o0 + c, pc.a - 1u);  // a clamped column is computed and not stored
      uint w0[STEP_WORDS];
      LOAD_STEP(w0u, b1, pc.base1 + row * units + u, t, w0);
#if MODE == 1
      uint w1[STEP_WORDS];
      LOAD_STEP(w1u, b4, pc.base4 + row * units + u, t, w1);
#endif
      [[unroll]] for (uint b = 0u; b < STEP_BLOCKS; ++b) {
        float v0[32];
        step_block(w0, t, b, v0);
#if MODE == 1
        float v1[32];
        step_block(w1, t, b, v1);
#endif
        [[unroll]] for (uint r = 0u; r < RT; ++r) {
          [[unroll]] for (uint j = 0u; j < 32u; ++j) {
            acc0[c][r] += v0[j] * xs[b][r][j];
#if MODE == 1
            acc1[c][r] += v1[j] * xs[b][r][j];
#endif
          }
        }
      }
    }
  }
  store_outputs(o0, r0, nr, acc0, acc1);
}
