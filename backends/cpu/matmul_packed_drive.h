// The loop the packed-weight integer kernels (arch/x86/matmul_packed_*.cpp) run around their
// tiles: output columns in groups of kPackedColumns (the packed layout's groups), activation
// rows in tiles of up to Isa::kMaxRows, and the dispatch by weight type. Only the tile is per
// ISA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/matmul_int8.h"
#include "backends/cpu/packed_weights.h"

namespace staticlm::cpu::detail::packed_drive {

// Isa provides kMaxRows, the block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K and Q5_K, and
//   template <class B, int R> static void Tile(const uint8_t* group, int64_t blocks,
//       const QuantizedActivations& x, int64_t r0, float* y, int64_t n_out, int count);
// computing rows [r0, r0 + R) of the group's first `count` columns into y (at row r0, the
// group's first column).

// The constants of a Q4_0, Q4_1, Q5_0 or Q5_1 block type that every ISA's steps share: its
// sections (LegacyLayout), whether it carries a min (Q4_1, Q5_1) and a fifth bit (Q5_0, Q5_1),
// and the offset of its stored unsigned values u = wq + kOffset (Q4_0 8, Q5_0 16, 0 with a min).
template <DType kType>
struct LegacyTraits {
  static constexpr PackedLegacyLayout kLayout = LegacyLayout(kType);
  static constexpr bool kHasMin = kLayout.scales > kPackedScales;
  static constexpr bool kFifth = kLayout.high_bits > 0;
  static constexpr int32_t kOffset = kHasMin ? 0 : kFifth ? 16 : 8;
  static constexpr size_t kBlockBytes = kLayout.block();
  static constexpr bool kSubBlockScales = false;
};

template <class Isa, class B, int R = 1>
void RunRows(int rows, const uint8_t* group, int64_t blocks, const QuantizedActivations& x,
             int64_t r0, float* y, int64_t n_out, int count) {
  if constexpr (R == Isa::kMaxRows) {
    Isa::template Tile<B, R>(group, blocks, x, r0, y, n_out, count);
  } else {
    if (rows == R) return Isa::template Tile<B, R>(group, blocks, x, r0, y, n_out, count);
    RunRows<Isa, B, R + 1>(rows, group, blocks, x, r0, y, n_out, count);
  }
}

template <class Isa, class B>
void Drive(DType type, const uint8_t* packed, int64_t n_out, const QuantizedActivations& x,
           float* y, int64_t o_begin, int64_t o_end) {
  const int64_t blocks = x.n_in / kQuantBlock;
  const size_t group_bytes = static_cast<size_t>(blocks) * PackedBlockBytes(type);
  for (int64_t o0 = o_begin; o0 < o_end; o0 += kPackedColumns) {
    const int count = static_cast<int>(std::min<int64_t>(o_end - o0, kPackedColumns));
    const uint8_t* group = packed + static_cast<size_t>(o0 / kPackedColumns) * group_bytes;
    for (int64_t r0 = 0; r0 < x.rows; r0 += Isa::kMaxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(x.rows - r0, Isa::kMaxRows));
      RunRows<Isa, B>(rows, group, blocks, x, r0, y + r0 * n_out + o0, n_out, count);
    }
  }
}

// MatMulIntPackedRangeFn's contract (matmul_int8.h) for one ISA.
template <class Isa>
void MatMulRange(DType type, const uint8_t* packed, int64_t n_out, const QuantizedActivations& x,
                 float* y, int64_t o_begin, int64_t o_end) {
  switch (type) {
    case DType::kQ8_0:
      return Drive<Isa, typename Isa::Q8_0>(type, packed, n_out, x, y, o_begin, o_end);
    case DType::kQ4_0:
      return Drive<Isa, typename Isa::Q4_0>(type, packed, n_out, x, y, o_begin, o_end);
    case DType::kQ4_1:
      return Drive<Isa, typename Isa::Q4_1>(type, packed, n_out, x, y, o_begin, o_end);
    case DType::kQ5_1:
      return Drive<Isa, typename Isa::Q5_1>(type, packed, n_out, x, y, o_begin, o_end);
    case DType::kQ6_K:
      return Drive<Isa, typename Isa::Q6_K>(type, packed, n_out, x, y, o_begin, o_end);
    case DType::kQ4_K:
      return Drive<Isa, typename Isa::Q4_K>(type, packed, n_out, x, y, o_begin, o_end);
    case DType::kQ5_K:
      return Drive<Isa, typename Isa::Q5_K>(type, packed, n_out, x, y, o_begin, o_end);
    default:  // Q5_0 (PackedSupportsType: no other type reaches here)
      return Drive<Isa, typename Isa::Q5_0>(type, packed, n_out, x, y, o_begin, o_end);
  }
}

}  // namespace staticlm::cpu::detail::packed_drive
