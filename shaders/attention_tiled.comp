#version 450
// Causal attention for the rows of one sequence's prefill chunk, tiled: workgroup (x, y) takes
// query rows x · R … x · R + R − 1 (R = WG / G, G = n_heads / kv_heads) for every query head
// of KV head y, an invocation per (row, head). It walks the keys any of its rows attends to in
// tiles of TILE keys, each loaded (and dequantized) once into shared memory for all of them,
// and keeps an online softmax (running max, sum) per (row, head); no combine pass. Each row
// takes only the keys of its own span (kv_policy.glsl): the sinks first, scored with the query
// rotated to its position inside the cache (the step's RoPE rows), then begin … its position.
// As attention_split.comp for everything else (bindings, q8's Hadamard basis, q4's rings),
// except b3: the output (rows, n_heads · hd). Rows are at step.position + r of step.sequence
// (a batched plan, a sequence per row, uses attention_split). Push constants as there, without
// e.
#include "common.glsl"
#include "kv_policy.glsl"
// WG: invocations per workgroup (a define of each variant).
#define TILE (2048 / HD)  // keys a tile holds: 16 KiB of f32 keys and values
#define HD4 (HD / 4)
layout(local_size_x = WG) in;
// Loops over a head's vec4s: unrolled (q and o then stay in registers) up to 128 wide; wider,
// lavapipe's compile of the unrolled form takes minutes, so they step HD_STEP vec4s per
// iteration (an unrolled inner loop). Why the step matters: llvmpipe ends every loop of an
// invocation once all of its loops together have run 65,535 iterations (gallivm's
// LP_MAX_TGSI_LOOP_ITERATIONS, one counter per invocation), so the iterations per key bound
// the keys one invocation can walk: 1 + 2 · (HD4 / HD_STEP + 1) per key (a loop's exit costs
// one; 19 at HD 256). vk_loop_budget.cpp counts them (TiledLoopIterations: change it with
// these loops) and vk_dispatch.cpp takes attention_split where a plan could exceed the budget.
#if HD > 128
#define HD_UNROLL [[dont_unroll]]
#define HD_STEP 8u
#else
#define HD_UNROLL [[unroll]]
#define HD_STEP HD4
#endif
// for (i = 0 … HD4 − 1) BODY, as HD4 / HD_STEP loop iterations.
#define FOR_HEAD(i, BODY)                                     \
  HD_UNROLL for (uint i##0 = 0u; i##0 < HD4; i##0 += HD_STEP) { \
    [[unroll]] for (uint i##1 = 0u; i##1 < HD_STEP; ++i##1) {  \
      uint i = i##0 + i##1;                                   \
      BODY                                                    \
    }                                                         \
  }

#include "kv_read.glsl"

// Keys and values as vec4s, HD wide (zero past head_dim), so that the loops over a key's
// elements have a constant count and the query and output stay in registers (a CPU device
// otherwise gathers from a per-invocation array).
shared vec4 k_tile[TILE * HD4];
shared vec4 v_tile[TILE * HD4];
#if KV_TYPE == 2
shared float k_scales[TILE];
shared float v_scales[TILE];
#endif

// Loads positions first … first + count − 1 (count ≤ TILE) of KV head g into the tiles.
void stage(uint first, uint count, uint g, uint step_end) {
  uint hd = pc.c;
  for (uint e = gl_LocalInvocationID.x; e < count * HD4; e += WG) {
    uint j = e / HD4, d = 4u * (e % HD4), t = first + j;
    uint row = g * pc.d + kv_slot(t, pc.d);
    at_position(t, row, step_end);
    vec4 k = vec4(0.0), v = vec4(0.0);
    if (d < hd) {  // head_dim is even, a multiple of 4 for q8 and q4: pairs at least
      k.xy = vec2(k_at(row * hd, d), k_at(row * hd, d + 1u));
      v.xy = vec2(v_at(row * hd, d), v_at(row * hd, d + 1u));
    }
    if (d + 2u < hd) {
      k.zw = vec2(k_at(row * hd, d + 2u), k_at(row * hd, d + 3u));
      v.zw = vec2(v_at(row * hd, d + 2u), v_at(row * hd, d + 3u));
    }
    k_tile[e] = k;
    v_tile[e] = v;
#if KV_TYPE == 2
    if (d == 0u) {
      k_scales[j] = k_scale_at(row);
      v_scales[j] = v_scale_at(row);
    }
#endif
  }
}

vec4 q[HD4], o[HD4];
float m = -1e30, l = 0.0;

// The online softmax over the staged keys j < count (positions first + j) this row attends
// to: lo ≤ position ≤ hi.
void attend(uint first, uint count, uint lo, uint hi) {
  for (uint j = 0u; j < count; ++j) {
    uint t = first + j;
    if (t < lo || t > hi) continue;
    float dot_qk = 0.0;  // summed in the order of the elements, as the reference
    FOR_HEAD(i, {
      vec4 k = k_tile[j * HD4 + i];
      dot_qk += q[i].x * k.x;
      dot_qk += q[i].y * k.y;
      dot_qk += q[i].z * k.z;
      dot_qk += q[i].w * k.w;
    })
#if KV_TYPE == 2
    dot_qk *= k_scales[j];
    float v_scale = v_scales[j];
#else
    float v_scale = 1.0;
#endif
    float score = dot_qk * pc.fa;
    // The rescale goes with the accumulation, in one loop (one loop's iterations per key):
    // the factor is exactly 1 unless the max grows.
    float m_new = max(m, score);
    float correction = exp(m - m_new), p = exp(score - m_new);
    l = l * correction + p;
    float pv = p * v_scale;
    FOR_HEAD(i, { o[i] = o[i] * correction + pv * v_tile[j * HD4 + i]; })
    m = m_new;
  }
}

// The query of row r, head h: rotated for the sinks when `sinks`, into q8's basis. Without q8
// it is loaded straight into the vec4s (each element's pair read from b0), with no
// per-invocation array: lavapipe compiles an array indexed in a loop HD wide into code that
// grows faster than HD.
void load_query(uint qi, uint r, bool sinks) {
  uint hd = pc.c;
#if KV_TYPE == 2
  float x[HD];
  for (uint d = 0u; d < HD; ++d) x[d] = d < hd ? uintBitsToFloat(b0[qi + d]) : 0.0;
  if (sinks) rotate_for_sinks(x, r);
  hadamard(x, hd);
  FOR_HEAD(i, { q[i] = vec4(x[4u * i], x[4u * i + 1u], x[4u * i + 2u], x[4u * i + 3u]); })
#else
  FOR_HEAD(i, {
    uint d = 4u * i;
    vec4 x = vec4(0.0);
    if (d < hd) {  // head_dim is even: whole pairs
      x.xy = sinks ? sink_query_pair_at(qi, r, d)
                   : vec2(uintBitsToFloat(b0[qi + d]), uintBitsToFloat(b0[qi + d + 1u]));
    }
    if (d + 2u < hd) {
      x.zw = sinks ? sink_query_pair_at(qi, r, d + 2u)
                   : vec2(uintBitsToFloat(b0[qi + d + 2u]), uintBitsToFloat(b0[qi + d + 3u]));
    }
    q[i] = x;
  })
#endif
}

void main() {
  uint hd = pc.c, heads = pc.a / pc.b;  // query heads per KV head
  uint tile_rows = WG / heads, n = active_rows();
  uint r0 = gl_WorkGroupID.x * tile_rows;
  if (r0 >= n) return;  // the whole workgroup: beyond this step's rows
  uint r_last = min(n, r0 + tile_rows) - 1u;
  uint lid = gl_LocalInvocationID.x;
  uint r = r0 + lid / heads, h = gl_WorkGroupID.y * heads + lid % heads;
  bool in_tile = lid < tile_rows * heads && r <= r_last;
  if (!in_tile) r = r_last;  // computes alongside, writes nothing
  uint g = row_sequence(r0) * pc.b + gl_WorkGroupID.y;  // KV head in the cache tensors
  uint step_end = row_step_end(r0), position = row_position(r);
  Attended span = kv_attended(position);
  // The tile's union of spans: sinks 0 … last.sink_end − 1, then first.begin … its last
  // position (begin never decreases with the position).
  uint last_position = row_position(r_last);
  Attended first = kv_attended(row_position(r0)), last = kv_attended(last_position);
  uint qi = pc.base0 + (r * pc.a + h) * hd;
  FOR_HEAD(i, { o[i] = vec4(0.0); })
  if (last.sink_end > 0u) {
    load_query(qi, r, span.sink_end > 0u);
    for (uint t0 = 0u; t0 < last.sink_end; t0 += TILE) {
      uint count = min(TILE, last.sink_end - t0);
      barrier();
      stage(t0, count, g, step_end);
      barrier();
      if (span.sink_end > 0u) attend(t0, count, 0u, span.sink_end - 1u);
    }
  }
  load_query(qi, r, false);
  uint keys = last_position + 1u > first.begin ? last_position + 1u - first.begin : 0u;
  for (uint k0 = 0u; k0 < keys; k0 += TILE) {
    uint count = min(TILE, keys - k0);
    barrier();
    stage(first.begin + k0, count, g, step_end);
    barrier();
    attend(first.begin + k0, count, span.begin, position);
  }
  if (!in_tile) return;
  uint out_i = pc.base3 + (r * pc.a + h) * hd;
#if KV_TYPE == 2
  float y[HD];
  FOR_HEAD(i, {
    y[4u * i] = o[i].x;
    y[4u * i + 1u] = o[i].y;
    y[4u * i + 2u] = o[i].z;
    y[4u * i + 3u] = o[i].w;
  })
  hadamard(y, hd);  // back to the plain basis
  for (uint d = 0u; d < hd; ++d) b3[out_i + d] = floatBitsToUint(y[d] / l);
#else
  FOR_HEAD(i, {
    uint d = 4u * i;
    if (d < hd) {
      b3[out_i + d] = floatBitsToUint(o[i].x / l);
      b3[out_i + d + 1u] = floatBitsToUint(o[i].y / l);
    }
    if (d + 2u < hd) {
      b3[out_i + d + 2u] = floatBitsToUint(o[i].z / l);
      b3[out_i + d + 3u] = floatBitsToUint(o[i].w / l);
    }
  })
#endif
}
