// Declarations every staticlm compute shader shares: one descriptor set of eight storage buffers
// of 32-bit words (floats are read with uintBitsToFloat, halves with unpackHalf2x16, so no
// 8/16-bit storage feature is needed), the step's parameters, and the push constants.
#extension GL_EXT_control_flow_attributes : enable

layout(std430, set = 0, binding = 0) buffer Buffer0 { uint b0[]; };
layout(std430, set = 0, binding = 1) buffer Buffer1 { uint b1[]; };
layout(std430, set = 0, binding = 2) buffer Buffer2 { uint b2[]; };
layout(std430, set = 0, binding = 3) buffer Buffer3 { uint b3[]; };
layout(std430, set = 0, binding = 4) buffer Buffer4 { uint b4[]; };
layout(std430, set = 0, binding = 5) buffer Buffer5 { uint b5[]; };
layout(std430, set = 0, binding = 6) buffer Buffer6 { uint b6[]; };
layout(std430, set = 0, binding = 7) buffer Buffer7 { uint b7[]; };

// Written by the host before each submit; one recording serves every chunk length. Rows of one
// sequence are at position + r of `sequence`; when rows_are_sequences (a batched decode plan,
// at most 64 rows), row r is sequence rows[r].x at position rows[r].y (kv_policy.glsl reads it).
layout(std140, set = 0, binding = 8) uniform StepBlock {
  int n_tokens;
  int position;
  int sequence;
  int rows_are_sequences;
  ivec4 rows[64];
} step;

// base0..base7: the word offset of each binding's tensor inside its bound range (descriptor
// offsets must be aligned; tensors need not be). rows: 0 = the step's n_tokens.
layout(push_constant) uniform PushConstants {
  uint base0, base1, base2, base3, base4, base5, base6, base7;
  uint rows;
  uint a, b, c, d, e, f, g, h, i;
  float fa;
  uint j;
} pc;

uint active_rows() { return pc.rows != 0u ? pc.rows : uint(step.n_tokens); }

float f32_at(uint word) { return uintBitsToFloat(word); }
