#version 450
// out (rows, width) = table[tokens[r]] dequantized, times the scale (Gemma: sqrt(width); else
// 1). b0 table, b1 tokens (I32), b2 out. Push constants: a width, c bytes per table row, d
// vocabulary size (ids are clamped to it; the runtime rejects bad ids before a step is run),
// e and f the first row and the row count of the table b0 holds (a table too large for one
// binding is split over several dispatches, each writing the rows whose ids it holds), fa the
// scale.
#include "common.glsl"
#include "weight_type.glsl"
layout(local_size_x = 64) in;
#define WBUF b0
#define DEQ dequant_row
#define DEQ_U32 table_u32
#define DEQ_HALF table_half
#include "dequant.glsl"

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint r = i / pc.a, k = i % pc.a;
  if (r >= active_rows()) return;
  uint token = min(b1[pc.base1 + r], pc.d - 1u);
  if (token < pc.e || token - pc.e >= pc.f) return;
  token -= pc.e;
  float v[CHUNK];
  dequant_row(pc.base0 * 4u + token * pc.c + (k / uint(QK)) * BLOCK_BYTES,
              (k % uint(QK)) / uint(CHUNK), v);
  // One rounded product after the dequantized value, as the CPU scales its rows.
  precise float y = v[k % uint(CHUNK)] * pc.fa;
  b2[pc.base2 + i] = floatBitsToUint(y);
}
