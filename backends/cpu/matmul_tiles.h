// Internal to the fast matmul: how the output is cut into tiles, shared by every ISA.
//
// A tile is O output features × R activation rows. Its kernel decodes each weight block of
// its O weight rows once and applies it to all R rows. Tiles are grouped in panels of weight
// rows (kPanelBytes): a panel is read from memory once and stays in L2 while every row tile
// passes over it, each row tile's activations staying in L1 across the panel's tiles. So the
// weights are streamed from memory exactly once per call, whatever the number of rows.
//
// Every kernel gives output (o, r) its own accumulator and the same sequence of operations
// whatever O, R or the tile's position, which makes the results independent of tiling.
#pragma once

#include <cstddef>
#include <cstdint>

#include "contract/dtype.h"

namespace staticlm::cpu::tiles {

// One tile: w points at its first weight row, x at its first activation row, y at its
// first output (row stride n_out).
struct TileArgs {
  const uint8_t* w;
  size_t row_bytes;  // bytes of one weight row
  const float* x;
  int64_t n_in;
  float* y;
  int64_t n_out;
};

using TileFn = void (*)(const TileArgs&);

// Decode (one activation row) streams every weight once, a tile's O rows as O interleaved
// streams — more than the hardware prefetchers follow well. So while a tile computes, the
// kernels ask for the tile kPrefetchTiles further on (its O rows are contiguous), spread over
// the tile's work in `parts` pieces: this is piece `part`. Measured ~1.25× on the decode shapes
// (bench/matmul_int8_bench, f32 kernels). Past the matrix's end it is harmless: a prefetch
// never faults.
constexpr int kPrefetchTiles = 2;

template <int O>
inline void PrefetchTileAhead(const TileArgs& a, int64_t part, int64_t parts) {
  const int64_t lines = static_cast<int64_t>(O * a.row_bytes + 63) / 64;
  const int64_t begin = lines * part / parts, end = lines * (part + 1) / parts;
  const uint8_t* ahead = a.w + kPrefetchTiles * O * a.row_bytes;
  for (int64_t l = begin; l < end; ++l) __builtin_prefetch(ahead + l * 64, 0, 3);
}

// K, the kernels of one ISA and weight type, provides
//   template <int O, int R> static void Run(const TileArgs&);   O outputs × R rows
//   static constexpr int kMaxRows;             rows per tile
//   static constexpr int kMaxOutputs;          outputs per tile when rows > 1
//   static constexpr int kMaxOutputsOneRow;    outputs per tile when rows == 1 (≥ kMaxOutputs)
template <class K, int R, int O = 1>
TileFn PickOutputs(int outputs) {
  constexpr int kLimit = R == 1 ? K::kMaxOutputsOneRow : K::kMaxOutputs;
  if constexpr (O == kLimit) {
    return &K::template Run<O, R>;
  } else {
    return outputs == O ? &K::template Run<O, R> : PickOutputs<K, R, O + 1>(outputs);
  }
}

template <class K, int R = 1>
TileFn PickTile(int outputs, int rows) {
  if constexpr (R == K::kMaxRows) {
    return PickOutputs<K, R>(outputs);
  } else {
    return rows == R ? PickOutputs<K, R>(outputs) : PickTile<K, R + 1>(outputs, rows);
  }
}

// Weights of one panel: small enough to stay in L2 (1-2 MiB on current x86 servers) while
// every row tile passes over them. 256 KiB to 1 MiB measured alike on the development machine.
constexpr size_t kPanelBytes = size_t{512} << 10;

// Computes outputs [o_begin, o_end) of every row. `whole` describes the full problem (w at
// row 0, y at (0, 0)).
template <class K>
void DriveTiles(const TileArgs& whole, int64_t rows, int64_t o_begin, int64_t o_end) {
  const int64_t tile_outputs = rows == 1 ? K::kMaxOutputsOneRow : K::kMaxOutputs;
  const int64_t tile_rows = K::kMaxRows;
  int64_t panel = static_cast<int64_t>(kPanelBytes / whole.row_bytes) / tile_outputs * tile_outputs;
  if (panel < tile_outputs) panel = tile_outputs;
  for (int64_t p0 = o_begin; p0 < o_end; p0 += panel) {
    const int64_t p1 = o_end - p0 < panel ? o_end : p0 + panel;
    for (int64_t r0 = 0; r0 < rows; r0 += tile_rows) {
      const int tile = static_cast<int>(rows - r0 < tile_rows ? rows - r0 : tile_rows);
      for (int64_t o0 = p0; o0 < p1; o0 += tile_outputs) {
        const int outputs = static_cast<int>(p1 - o0 < tile_outputs ? p1 - o0 : tile_outputs);
        TileArgs args = whole;
        args.w = whole.w + static_cast<size_t>(o0) * whole.row_bytes;
        args.x = whole.x + r0 * whole.n_in;
        args.y = whole.y + r0 * whole.n_out + o0;
        PickTile<K>(outputs, tile)(args);
      }
    }
  }
}

// The tiles of `type` with one ISA's kernels: Kernels::Q4_0, Q4_1, Q8_0, F32, F16 and BF16 are
// that ISA's tile kernels (K above) for each weight type; Kernels::Q5_0, Q5_1, Q4_K, Q5_K and
// Q6_K are optional (an ISA may not have them yet). False for a type without tiles: the caller
// then runs the reference kernel for the product.
template <class Kernels>
bool DriveByType(DType type, const TileArgs& whole, int64_t rows, int64_t o_begin, int64_t o_end) {
  switch (type) {
    case DType::kQ4_0:
      DriveTiles<typename Kernels::Q4_0>(whole, rows, o_begin, o_end);
      return true;
    case DType::kQ4_1:
      DriveTiles<typename Kernels::Q4_1>(whole, rows, o_begin, o_end);
      return true;
    case DType::kQ8_0:
      DriveTiles<typename Kernels::Q8_0>(whole, rows, o_begin, o_end);
      return true;
    case DType::kF32:
      DriveTiles<typename Kernels::F32>(whole, rows, o_begin, o_end);
      return true;
    case DType::kF16:
      DriveTiles<typename Kernels::F16>(whole, rows, o_begin, o_end);
      return true;
    case DType::kBF16:
      DriveTiles<typename Kernels::BF16>(whole, rows, o_begin, o_end);
      return true;
    case DType::kQ5_0:
      if constexpr (requires { typename Kernels::Q5_0; }) {
        DriveTiles<typename Kernels::Q5_0>(whole, rows, o_begin, o_end);
        return true;
      }
      return false;
    case DType::kQ5_1:
      if constexpr (requires { typename Kernels::Q5_1; }) {
        DriveTiles<typename Kernels::Q5_1>(whole, rows, o_begin, o_end);
        return true;
      }
      return false;
    case DType::kQ4_K:
      if constexpr (requires { typename Kernels::Q4_K; }) {
        DriveTiles<typename Kernels::Q4_K>(whole, rows, o_begin, o_end);
        return true;
      }
      return false;
    case DType::kQ5_K:
      if constexpr (requires { typename Kernels::Q5_K; }) {
        DriveTiles<typename Kernels::Q5_K>(whole, rows, o_begin, o_end);
        return true;
      }
      return false;
    case DType::kQ6_K:
      if constexpr (requires { typename Kernels::Q6_K; }) {
        DriveTiles<typename Kernels::Q6_K>(whole, rows, o_begin, o_end);
        return true;
      }
      return false;
    default:
      return false;
  }
}

}  // namespace staticlm::cpu::tiles
