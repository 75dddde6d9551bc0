// Weights repacked at init into the layout the integer-activation kernels stream fastest: the
// rows of 16 output columns interleaved so that one decode product reads its weights front to
// back, with no gathers and no cross-lane sums (issue 16: the Q8_0 output head was read at
// ~11 GB/s in its file layout on one core, ~20 GB/s repacked).
//
// Layout "x16": groups of 16 output rows (the last group repeats its last row to fill 16), each
// group its blocks of 32 values in sections, every section block after block:
//   Q8_0 (544 bytes per block): scales, 32 bytes per block (the 16 rows' f16 d, row c at 2c);
//     then quants, 512 bytes per block: 8 chunks of 64 bytes, byte 4c + i of chunk k being row
//     c's quant 4k + i (int8, as in the file).
//   Q5_0 (352 bytes per block): scales as Q8_0's; then the high bits, 64 bytes per block (row
//     c's 32-bit qh at 4c, bit e = bit 4 of value e); then the nibbles, 256 bytes per block: 4
//     chunks of 64 bytes, byte 4c + i of chunk k holding row c's value 8k + i in its low nibble
//     and value 8k + 4 + i in its high nibble.
// So a 64-byte chunk is 4 consecutive values of each of the 16 rows (Q5_0: two such sets, one
// per nibble): one lane per row of an AVX-512 dot-product instruction (two AVX2 registers of 8
// rows each). With an even number of blocks (every model's widths) every chunk is 64-byte
// aligned in the 64-byte-aligned copy. A packed copy has the file's size.
//
// The repacked copy is planned memory: the CPU backend allocates it at Prepare (counted in
// MemoryReport::packed_weights_bytes), the file stays mapped read-only and still serves every
// other reader of the tensor (a tied embedding's rows).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "contract/dtype.h"
#include "platform/status.h"

namespace staticlm::cpu {

constexpr int64_t kPackedColumns = 16;    // output rows per group
constexpr size_t kPackedScales = 32;      // scale bytes per block of a group
constexpr size_t kPackedQ8_0Block = 544;  // bytes per block of a group: scales, 512 of quants
constexpr size_t kPackedQ5_0Block = 352;  // scales, 64 of high bits, 256 of nibbles
constexpr size_t kPackedQ5_0HighBits = 64;

// Whether matrices of `type` have a packed layout.
inline bool PackedSupportsType(DType type) {
  return type == DType::kQ8_0 || type == DType::kQ5_0;
}

// Bytes per block of a group of `type` (PackedSupportsType).
inline size_t PackedBlockBytes(DType type) {
  return type == DType::kQ8_0 ? kPackedQ8_0Block : kPackedQ5_0Block;
}

// Bytes of the packed copy of a [n_out, n_in] matrix of `type` (PackedSupportsType).
uint64_t PackedBytes(DType type, int64_t n_out, int64_t n_in);

// Writes the x16 layout of the matrix `w` [n_out, n_in] of `type` (PackedSupportsType; file
// layout) to `out` (PackedBytes bytes). Init only.
void PackX16(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, uint8_t* out);

// The packed copies of one backend's weight matrices, found by the address of the file's
// tensor. Built at Prepare; Find is the run phase's lookup (no allocation).
class PackedWeights {
 public:
  struct Matrix {
    const uint8_t* file = nullptr;  // the tensor in the mapped file
    DType type = DType::kF32;
    int64_t n_out = 0, n_in = 0;
  };
  // Init only: packs each distinct matrix (duplicates by address are packed once) into one
  // 64-byte-aligned allocation.
  Status Build(const std::vector<Matrix>& matrices);
  // Run phase: the packed copy of the matrix at `file`, or nullptr when it has none.
  const uint8_t* Find(const uint8_t* file) const;
  uint64_t bytes() const { return bytes_; }
  size_t count() const { return entries_.size(); }

 private:
  struct Entry {
    const uint8_t* file;
    const uint8_t* packed;
  };
  struct AlignedDelete {
    void operator()(uint8_t* p) const;
  };
  std::vector<Entry> entries_;  // sorted by file address
  std::unique_ptr<uint8_t[], AlignedDelete> storage_;
  uint64_t bytes_ = 0;
};

}  // namespace staticlm::cpu
