#version 450
// y (rows, n_out) = x (rows, n_in) · wᵀ for one weight type, with the plan's fused forms:
//   MODE 0: y0 = x · w0ᵀ
//   MODE 1: y1 = x · w1ᵀ, y0 = silu(x · w0ᵀ) · y1   (gate and up share x)
//   MODE 2: y0 = x · w0ᵀ, acc += y0                  (residual add)
// STYLE 0: one output column per invocation (fastest on CPU devices such as lavapipe).
// STYLE 1: one output column per workgroup, chunks split over its invocations and summed with
//          subgroupAdd then shared memory (the GPU form).
// Bindings: b0 x, b1 w0, b2 y0, b3 y1 or acc, b4 w1. Push constants: a n_out, b n_in,
// c bytes per weight row. Workgroup y: a tile of RT rows (a define: 1 for decode plans, 8 for
// prefill; CPU devices run masked-off rows of a tile anyway), so one recording serves any
// n_tokens.
#include "common.glsl"
#include "weight_type.glsl"
#if STYLE == 1
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif

#define RT uint(ROWS)
// Output columns per invocation (STYLE 0): each loaded x value serves COLS columns. STYLE 0
// workgroups are small so that lavapipe's threads (one workgroup each) all get work.
#if STYLE == 0
#define COLS 4u
#define WG 16
#else
#define COLS 1u
#define WG 64
#endif

layout(local_size_x = WG) in;

#define WBUF b1
#define DEQ dequant_w0
#define DEQ_U32 w0_u32
#define DEQ_HALF w0_half
#include "dequant.glsl"
#undef WBUF
#undef DEQ
#undef DEQ_U32
#undef DEQ_HALF
#define WBUF b4
#define DEQ dequant_w1
#define DEQ_U32 w1_u32
#define DEQ_HALF w1_half
#include "dequant.glsl"

#include "matmul_store.glsl"

#if STYLE == 1
shared float partial[WG / 4][RT];  // one slot per subgroup (subgroups of at least 4)
#endif

void main() {
#if STYLE == 0
  uint o0 = gl_GlobalInvocationID.x * COLS;
  uint lane = 0u, lanes = 1u;
  if (o0 >= pc.a) return;
#else
  uint o0 = gl_WorkGroupID.x;
  uint lane = gl_LocalInvocationID.x, lanes = uint(WG);
#endif
  uint rows = active_rows();
  uint r0 = gl_WorkGroupID.y * RT;
  if (r0 >= rows) return;
  uint nr = min(RT, rows - r0);
  float acc0[COLS][RT], acc1[COLS][RT];
  [[unroll]] for (uint c = 0u; c < COLS; ++c) {
    [[unroll]] for (uint r = 0u; r < RT; ++r) {
      acc0[c][r] = 0.0;
      acc1[c][r] = 0.0;
    }
  }
  // The row in chunks of CHUNK values (a block, or a K-quant's 32-value sub-block).
  uint n_chunks = pc.b / uint(CHUNK);
  for (uint ch = lane; ch < n_chunks; ch += lanes) {
    // The x chunk of every row is loaded once and used for all COLS columns: on lavapipe an
    // x load is a per-lane gather and cost more than the weights (see docs/vulkan.md).
    float xs[RT][CHUNK];
    [[unroll]] for (uint r = 0u; r < RT; ++r) {
      uint xw = pc.base0 + (r0 + min(r, nr - 1u)) * pc.b + ch * uint(CHUNK);
      [[unroll]] for (uint j = 0u; j < uint(CHUNK); ++j) xs[r][j] = uintBitsToFloat(b0[xw + j]);
    }
    uint block_byte = (ch / CHUNKS_PER_BLOCK) * BLOCK_BYTES, sub = ch % CHUNKS_PER_BLOCK;
    [[unroll]] for (uint c = 0u; c < COLS; ++c) {
      uint o = min(o0 + c, pc.a - 1u);  // a clamped column is computed and not stored
      float v0[CHUNK];
      dequant_w0(pc.base1 * 4u + o * pc.c + block_byte, sub, v0);
#if MODE == 1
      float v1[CHUNK];
      dequant_w1(pc.base4 * 4u + o * pc.c + block_byte, sub, v1);
#endif
      [[unroll]] for (uint r = 0u; r < RT; ++r) {
        [[unroll]] for (uint j = 0u; j < uint(CHUNK); ++j) {
          acc0[c][r] += v0[j] * xs[r][j];
#if MODE == 1
          acc1[c][r] += v1[j] * xs[r][j];
#endif
        }
      }
    }
  }
#if STYLE == 1
  // Sum over the workgroup: within each subgroup, then across subgroups in shared memory.
  uint n_sub = gl_NumSubgroups;
  [[unroll]] for (uint pass = 0u; pass < (MODE == 1 ? 2u : 1u); ++pass) {
    [[unroll]] for (uint r = 0u; r < RT; ++r) {
      float s = subgroupAdd(pass == 0u ? acc0[0][r] : acc1[0][r]);
      if (gl_SubgroupInvocationID == 0u) partial[gl_SubgroupID][r] = s;
    }
    barrier();
    [[unroll]] for (uint r = 0u; r < RT; ++r) {
      float s = 0.0;
      for (uint i = 0u; i < n_sub; ++i) s += partial[i][r];
      if (pass == 0u) acc0[0][r] = s; else acc1[0][r] = s;
    }
    barrier();
  }
  if (lane != 0u) return;
#endif
  store_outputs(o0, r0, nr, acc0, acc1);
}
