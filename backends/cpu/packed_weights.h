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
//   Q4_0, Q4_1, Q5_0, Q5_1 (288, 320, 352, 384 bytes per block): scales, 32 bytes per block
//     (the 16 rows' f16 d, row c at 2c), 64 with a min (Q4_1, Q5_1: their f16 m follow at
//     32 + 2c); then with a fifth bit (Q5_0, Q5_1) the high bits, 64 bytes per block (row c's
//     32-bit qh at 4c, bit e = bit 4 of value e); then the nibbles, 256 bytes per block: 4
//     chunks of 64 bytes, byte 4c + i of chunk k holding row c's value 8k + i in its low nibble
//     and value 8k + 4 + i in its high nibble (the low 4 bits of the format's unsigned values).
//   Q6_K (n_in a multiple of 256; 420 bytes per block of 32 on average): d, 32 bytes per
//     super-block of 256 (the 16 rows' f16 d, row c at 2c); then scales, 32 bytes per block
//     (int8: row c's scale of the block's values 0-15 at c, of values 16-31 at 16 + c); then the
//     high bits, 128 bytes per block: 2 chunks of 64 bytes, bits 2j, 2j + 1 of byte 4c + i of
//     chunk k being bits 4-5 of row c's value 16k + 4j + i; then the nibbles, 256 bytes per
//     block, as Q5_0's (the low 4 bits). The values are the unsigned q6 = wq + 32.
//   Q4_K (n_in a multiple of 256; 296 bytes per block of 32 on average): d and dmin, 64 bytes
//     per super-block (the 16 rows' f16 d, row c at 2c, then their f16 dmin at 32 + 2c); then
//     scales, 32 bytes per block (row c's 6-bit scale of the block at c, its 6-bit min at
//     16 + c, one byte each); then the nibbles, 256 bytes per block, as Q5_0's. 296 / 288 of
//     the file's size.
//   Q5_K (n_in a multiple of 256; 360 bytes per block of 32 on average): d, dmin and scales as
//     Q4_K's; then the high bits, 64 bytes per block, as Q5_0's (row c's 32-bit word at 4c,
//     bit e = bit 4 of the block's value e); then the nibbles, 256 bytes per block. 360 / 352
//     of the file's size.
// So a 64-byte chunk is 4 consecutive values of each of the 16 rows (the 4- to 6-bit types: two
// such sets, one per nibble): one lane per row of an AVX-512 dot-product instruction (two AVX2
// registers of 8 rows each). With an even number of blocks (every model's widths) every chunk of
// Q8_0, Q4_0 and Q5_0 is 64-byte aligned in the 64-byte-aligned copy (Q4_1's and Q5_1's always;
// Q6_K's with a whole number of 2 super-blocks). A packed copy has the file's size (Q4_K: 2.8 %
// more, Q5_K 2.3 %).
//
// The repacked copy is planned memory: the CPU backend allocates it at Prepare (counted in
// MemoryReport::packed_weights_bytes), the file stays mapped read-only and still serves every
// other reader of the tensor (a tied embedding's rows).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "contract/dtype.h"
#include "platform/aligned_buffer.h"
#include "platform/status.h"

namespace staticlm::cpu {

constexpr int64_t kPackedColumns = 16;    // output rows per group
constexpr size_t kPackedScales = 32;      // scale bytes per block of a group
constexpr size_t kPackedQ8_0Block = 544;  // bytes per block of a group: scales, 512 of quants
constexpr size_t kPackedNibbles = 256;    // nibble bytes per block of a group (4- to 6-bit types)
constexpr size_t kPackedQ6_KBlock = 420;  // per block of 32: 4 of d, 32 of scales, 128, 256
constexpr size_t kPackedQ4_KBlock = 296;  // per block of 32: 8 of d, dmin, 32 of scales, 256
constexpr size_t kPackedQ5_KBlock = 360;  // Q4_K's and 64 of high bits

// The sections of a block of a group of Q4_0, Q4_1, Q5_0 or Q5_1, in bytes.
struct PackedLegacyLayout {
  size_t scales;     // 32: the rows' d; 64: d, then m
  size_t high_bits;  // 64 with a fifth bit, else 0
  constexpr size_t block() const { return scales + high_bits + kPackedNibbles; }
};
constexpr bool IsPackedLegacy(DType type) {
  return type == DType::kQ4_0 || type == DType::kQ4_1 || type == DType::kQ5_0 ||
         type == DType::kQ5_1;
}
constexpr PackedLegacyLayout LegacyLayout(DType type) {
  const bool min = type == DType::kQ4_1 || type == DType::kQ5_1;
  const bool fifth = type == DType::kQ5_0 || type == DType::kQ5_1;
  return {min ? 2 * kPackedScales : kPackedScales, fifth ? size_t{64} : 0};
}

// Whether matrices of `type` have a packed layout.
inline bool PackedSupportsType(DType type) {
  return type == DType::kQ8_0 || IsPackedLegacy(type) || type == DType::kQ6_K ||
         type == DType::kQ4_K || type == DType::kQ5_K;
}

// Bytes per block of 32 of a group of `type` (PackedSupportsType; Q6_K: on average).
inline size_t PackedBlockBytes(DType type) {
  if (type == DType::kQ6_K) return kPackedQ6_KBlock;
  if (type == DType::kQ4_K) return kPackedQ4_KBlock;
  if (type == DType::kQ5_K) return kPackedQ5_KBlock;
  return type == DType::kQ8_0 ? kPackedQ8_0Block : LegacyLayout(type).block();
}

// Where Q6_K's sections start in a group of `blocks` blocks of 32 (its d at 0).
struct PackedQ6KSections {
  size_t scales, high_bits, nibbles;
};
inline PackedQ6KSections Q6KSections(int64_t blocks) {
  const size_t n = static_cast<size_t>(blocks);
  return {4 * n, 36 * n, 164 * n};
}

// Where Q4_K's sections start in a group of `blocks` blocks of 32 (its d and dmin at 0).
struct PackedQ4KSections {
  size_t scales, nibbles;
};
inline PackedQ4KSections Q4KSections(int64_t blocks) {
  const size_t n = static_cast<size_t>(blocks);
  return {8 * n, 40 * n};
}

// Where Q5_K's sections start in a group of `blocks` blocks of 32 (its d and dmin at 0).
struct PackedQ5KSections {
  size_t scales, high_bits, nibbles;
};
inline PackedQ5KSections Q5KSections(int64_t blocks) {
  const size_t n = static_cast<size_t>(blocks);
  return {8 * n, 40 * n, 104 * n};
}

// Bytes of the packed copy of a [n_out, n_in] matrix of `type` (PackedSupportsType), or 0 when
// the matrix has none (another type, or rows that are not whole blocks).
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
    // Nothing but packed products reads the file's copy: once packed, its pages are given back
    // (platform/page_out.h), so the process does not hold the matrix twice.
    bool page_out_file = false;
  };
  // Init only: packs each distinct matrix (duplicates by address are packed once, and their
  // file copy paged out only if every listing allows it) into one 64-byte-aligned allocation,
  // on huge pages where `pages` asks and the system allows (platform/huge_pages.h).
  Status Build(const std::vector<Matrix>& matrices, Pages pages = Pages::kNormal);
  // Run phase: the packed copy of the matrix at `file`, or nullptr when it has none.
  const uint8_t* Find(const uint8_t* file) const;
  uint64_t bytes() const { return bytes_; }
  const uint8_t* data() const { return storage_.data(); }
  size_t count() const { return entries_.size(); }

 private:
  struct Entry {
    const uint8_t* file;
    const uint8_t* packed;
  };
  std::vector<Entry> entries_;  // sorted by file address
  AlignedBuffer storage_;
  uint64_t bytes_ = 0;
};

}  // namespace staticlm::cpu
