// The loop every integer-activation kernel (matmul_int8_avx2.cpp, matmul_int8_avx512vnni.cpp)
// runs around its tiles: output columns in groups of one per lane, a software prefetch of a
// later group's weight rows, activation rows in tiles of up to kMaxRows, and the dispatch by
// weight type and activation width. Only the tile itself is per ISA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backends/cpu/matmul_int8.h"

namespace staticlm::cpu::detail::int_drive {

// The weight rows of one group of output columns, one column per lane; an ISA's Group extends
// it with the registers its tiles want (e.g. the offsets as a vector, a lane mask).
template <int kColumns>
struct Columns {
  const uint8_t* cols[kColumns];    // column c's weight row (tail lanes repeat the last column)
  int32_t offset_values[kColumns];  // cols[c] − cols[0], for gathering the block scales
  int count;                        // real columns
  // Weights to pull into cache while this group computes: a later group's rows, contiguous.
  const uint8_t* prefetch;
  int64_t prefetch_lines;
};

// Isa provides kColumns, kMaxRows, kPrefetchGroups, a Group made by
// `static Group MakeGroup(const Columns<kColumns>&)`, the column types Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q4_K, Q6_K (each with Scales, Load and a State: see the ISA files) and
//   template <class B, int kBits, int R>
//   static void RunTile(const Group&, const QuantizedActivations&, int64_t r0, float* y,
//                       int64_t n_out);

// Values per weight block of column type B: 32, or a K-quant's 256 (B::kBlockValues), whose
// 32-value sub-blocks the tiles take one at a time.
template <class B>
constexpr int64_t BlockValues() {
  if constexpr (requires { B::kBlockValues; }) {
    return B::kBlockValues;
  } else {
    return kQuantBlock;
  }
}

// Whether column type B scales each half (16 values) of a block by its own integer (Q6_K:
// B::kSubBlockScales, B::SubBlockScales) inside the integer dot.
template <class B>
constexpr bool HasSubBlockScales() {
  if constexpr (requires { B::kSubBlockScales; }) {
    return B::kSubBlockScales;
  } else {
    return false;
  }
}

// Where block b of a Q6_K row keeps its 32 values and two scales (ggml's super-block of 256:
// ql[128], qh[64], int8 scales[16], f16 d; block b is elements 32u ... 32u + 31, u = b % 8, of
// super-block b / 8: run k = u % 4 of half h = u / 4). Both ISA files load by it.
struct Q6KBlockPlace {
  size_t ql, qh;     // bytes from the row's start: elements 0-15 there, 16-31 16 bytes further
  int nibble_shift;  // bits 0-3 of element i: (ql[i] >> nibble_shift) & 15 (high nibbles: k ≥ 2)
  int high_shift;    // bits 4-5: (qh[i] >> high_shift) & 3
  int scale_word;    // which 32-bit word of the scales holds both of the block's (a, then b)
  int scale_a_up;    // the left shift that puts scale a's byte at the top of that word (b: − 8)
};

inline Q6KBlockPlace Q6KPlaceOf(int64_t b) {
  constexpr size_t kSuperBlockBytes = 210;
  const int unit = static_cast<int>(b % 8), half = unit / 4, run = unit % 4;
  const size_t block = static_cast<size_t>(b / 8) * kSuperBlockBytes;
  return {block + 64 * half + 32 * (run % 2),
          block + 128 + 32 * half,
          4 * (run / 2),
          2 * run,
          unit / 2,
          24 - 16 * (unit % 2)};
}

// RunTile for a tile of `rows` (1..kMaxRows) rows.
template <class Isa, class B, int kBits, int R = 1>
void RunRows(int rows, const typename Isa::Group& g, const QuantizedActivations& x, int64_t r0,
             float* y, int64_t n_out) {
  if constexpr (R == Isa::kMaxRows) {
    Isa::template RunTile<B, kBits, R>(g, x, r0, y, n_out);
  } else {
    if (rows == R) return Isa::template RunTile<B, kBits, R>(g, x, r0, y, n_out);
    RunRows<Isa, B, kBits, R + 1>(rows, g, x, r0, y, n_out);
  }
}

template <class Isa, class B, int kBits>
void Drive(const uint8_t* w, int64_t n_out, const QuantizedActivations& x, float* y,
           int64_t o_begin, int64_t o_end) {
  constexpr int kColumns = Isa::kColumns;
  const size_t row_bytes = static_cast<size_t>(x.n_in / BlockValues<B>()) * B::kBytes;
  for (int64_t o0 = o_begin; o0 < o_end; o0 += kColumns) {
    Columns<kColumns> c;
    c.count = static_cast<int>(o_end - o0 < kColumns ? o_end - o0 : kColumns);
    for (int i = 0; i < kColumns; ++i) {
      const int64_t column = o0 + (i < c.count ? i : c.count - 1);
      c.cols[i] = w + static_cast<size_t>(column) * row_bytes;
      c.offset_values[i] = static_cast<int32_t>(c.cols[i] - c.cols[0]);
    }
    const int64_t ahead_begin = std::min(n_out, o0 + kColumns * Isa::kPrefetchGroups);
    const int64_t ahead_end = std::min(n_out, ahead_begin + kColumns);
    c.prefetch = w + static_cast<size_t>(ahead_begin) * row_bytes;
    c.prefetch_lines = static_cast<int64_t>((ahead_end - ahead_begin) * row_bytes + 63) / 64;
    typename Isa::Group g = Isa::MakeGroup(c);
    for (int64_t r0 = 0; r0 < x.rows; r0 += Isa::kMaxRows) {
      if (r0 > 0) g.prefetch_lines = 0;  // the first row tile has done it
      const int rows = static_cast<int>(std::min<int64_t>(x.rows - r0, Isa::kMaxRows));
      RunRows<Isa, B, kBits>(rows, g, x, r0, y + r0 * n_out + o0, n_out);
    }
  }
}

// MatMulIntRange's contract (matmul_int8.h) for the types Isa has tiles for.
template <class Isa>
void MatMulIntRange(DType type, const uint8_t* w, int64_t n_out, const QuantizedActivations& x,
                    float* y, int64_t o_begin, int64_t o_end) {
  auto drive = [&](auto bits) {
    constexpr int kBits = decltype(bits)::value;
    switch (type) {
      case DType::kQ4_0:
        return Drive<Isa, typename Isa::Q4_0, kBits>(w, n_out, x, y, o_begin, o_end);
      case DType::kQ4_1:
        return Drive<Isa, typename Isa::Q4_1, kBits>(w, n_out, x, y, o_begin, o_end);
      case DType::kQ5_0:
        return Drive<Isa, typename Isa::Q5_0, kBits>(w, n_out, x, y, o_begin, o_end);
      case DType::kQ5_1:
        return Drive<Isa, typename Isa::Q5_1, kBits>(w, n_out, x, y, o_begin, o_end);
      case DType::kQ8_0:
        return Drive<Isa, typename Isa::Q8_0, kBits>(w, n_out, x, y, o_begin, o_end);
      case DType::kQ4_K:
        return Drive<Isa, typename Isa::Q4_K, kBits>(w, n_out, x, y, o_begin, o_end);
      case DType::kQ6_K:  // 8-bit activations only (IntSupportsType)
        if constexpr (kBits == 8) {
          return Drive<Isa, typename Isa::Q6_K, kBits>(w, n_out, x, y, o_begin, o_end);
        }
        return ref::MatMulIntRange(type, w, n_out, x, y, o_begin, o_end);
      default:
        return ref::MatMulIntRange(type, w, n_out, x, y, o_begin, o_end);
    }
  };
  if (x.bits == 16) {
    drive(std::integral_constant<int, 16>{});
  } else {
    drive(std::integral_constant<int, 8>{});
  }
}

}  // namespace staticlm::cpu::detail::int_drive
