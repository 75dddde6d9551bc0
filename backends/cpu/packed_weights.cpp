#include "backends/cpu/packed_weights.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/dequantize_k.h"
#include "backends/cpu/kquant_scales.h"
#include "platform/page_out.h"

namespace staticlm::cpu {
namespace {

constexpr size_t kQ8_0FileBlock = 34;   // f16 d, 32 int8 quants
constexpr size_t kQ6_KFileBlock = 210;  // ql[128], qh[64], int8 scales[16], f16 d (256 values)
constexpr size_t kQ4_KFileBlock = 144;  // f16 d, dmin, 12 bytes of 6-bit scales, 128 of nibbles
constexpr size_t kQ5_KFileBlock = 176;  // Q4_K's, with qh[32] before the nibbles
constexpr size_t kAlignment = 64;

int64_t Groups(int64_t n_out) {
  return (n_out + kPackedColumns - 1) / kPackedColumns;
}

// Row c's block b of Q8_0: its quants into the 8 chunks.
void PackQ8_0Quants(const uint8_t* src, int64_t c, uint8_t* quants) {
  for (int k = 0; k < 8; ++k) std::memcpy(quants + 64 * k + 4 * c, src + 2 + 4 * k, 4);
}

// Row c's block of 32 values u[32] (any 4-bit values) into the 4 nibble chunks, as Q5_0's.
void PackNibbles(const int u[32], int64_t c, uint8_t* nibbles) {
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 4; ++i) {
      nibbles[64 * k + 4 * c + i] =
          static_cast<uint8_t>((u[8 * k + i] & 0x0f) | (u[8 * k + 4 + i] & 0x0f) << 4);
    }
  }
}

// Row c's block of Q4_0, Q4_1, Q5_0 or Q5_1 (`src`, the file's: f16 d, [f16 m], [32-bit qh],
// 16 bytes of nibbles) into the block's scales, high bits (with a fifth bit) and nibbles.
void PackLegacyBlock(DType type, const uint8_t* src, int64_t c, uint8_t* scales, uint8_t* high_bits,
                     uint8_t* nibbles) {
  const PackedLegacyLayout layout = LegacyLayout(type);
  const bool min = layout.scales > kPackedScales;
  std::memcpy(scales + 2 * c, src, 2);
  if (min) std::memcpy(scales + kPackedScales + 2 * c, src + 2, 2);
  const uint8_t* after_scales = src + (min ? 4 : 2);
  const uint8_t* qs = after_scales;
  if (layout.high_bits > 0) {
    std::memcpy(high_bits + 4 * c, after_scales, 4);
    qs += 4;
  }
  int low[32];  // value e's low 4 bits (file: value e < 16 low, e + 16 high)
  for (int e = 0; e < 32; ++e) low[e] = e < 16 ? qs[e] & 0x0f : qs[e - 16] >> 4;
  PackNibbles(low, c, nibbles);
}

// Row c's super-block `src` of Q6_K into group `group` (of `blocks` blocks) at super-block sb.
void PackQ6_KSuperBlock(const uint8_t* src, int64_t c, int64_t sb, int64_t blocks, uint8_t* group) {
  const PackedQ6KSections at = Q6KSections(blocks);
  std::memcpy(group + 32 * sb + 2 * c, src + 208, 2);
  for (int64_t unit = 0; unit < 8; ++unit) {
    const int64_t b = 8 * sb + unit;
    group[at.scales + 32 * b + c] = src[192 + 2 * unit];
    group[at.scales + 32 * b + 16 + c] = src[192 + 2 * unit + 1];
    int u[32];
    for (int e = 0; e < 32; ++e) {
      u[e] = kquant::Q6KInteger(src, static_cast<int>(32 * unit) + e) + 32;  // q6, 0..63
    }
    uint8_t* high = group + at.high_bits + 128 * b;
    for (int e = 0; e < 32; ++e) {
      const int k = e / 16, j = (e % 16) / 4, i = e % 4;
      high[64 * k + 4 * c + i] |= static_cast<uint8_t>((u[e] >> 4) << (2 * j));
    }
    PackNibbles(u, c, group + at.nibbles + 256 * b);
  }
}

// Row c's super-block `src` of Q4_K into group `group` (of `blocks` blocks) at super-block sb.
void PackQ4_KSuperBlock(const uint8_t* src, int64_t c, int64_t sb, int64_t blocks, uint8_t* group) {
  const PackedQ4KSections at = Q4KSections(blocks);
  std::memcpy(group + 64 * sb + 2 * c, src, 2);
  std::memcpy(group + 64 * sb + 32 + 2 * c, src + 2, 2);
  uint8_t sc[8], mins[8];
  kquant::UnpackScalesAndMins(src + 4, sc, mins);
  for (int64_t unit = 0; unit < 8; ++unit) {
    const int64_t b = 8 * sb + unit;
    group[at.scales + 32 * b + c] = sc[unit];
    group[at.scales + 32 * b + 16 + c] = mins[unit];
    int u[32];  // sub-blocks 2i, 2i + 1: the low, high nibbles of the same 32 bytes
    for (int e = 0; e < 32; ++e) u[e] = src[16 + 32 * (unit / 2) + e] >> (4 * (unit % 2));
    PackNibbles(u, c, group + at.nibbles + 256 * b);
  }
}

// Row c's super-block `src` of Q5_K into group `group` (of `blocks` blocks) at super-block sb.
void PackQ5_KSuperBlock(const uint8_t* src, int64_t c, int64_t sb, int64_t blocks, uint8_t* group) {
  const PackedQ5KSections at = Q5KSections(blocks);
  std::memcpy(group + 64 * sb + 2 * c, src, 2);
  std::memcpy(group + 64 * sb + 32 + 2 * c, src + 2, 2);
  uint8_t sc[8], mins[8];
  kquant::UnpackScalesAndMins(src + 4, sc, mins);
  const uint8_t* qh = src + 16;
  for (int64_t unit = 0; unit < 8; ++unit) {
    const int64_t b = 8 * sb + unit;
    group[at.scales + 32 * b + c] = sc[unit];
    group[at.scales + 32 * b + 16 + c] = mins[unit];
    uint32_t word = 0;  // bit e: bit 4 of the block's value e
    for (int e = 0; e < 32; ++e) word |= static_cast<uint32_t>((qh[e] >> unit) & 1) << e;
    std::memcpy(group + at.high_bits + 64 * b + 4 * c, &word, 4);
    int u[32];  // sub-blocks 2i, 2i + 1: the low, high nibbles of the same 32 bytes
    for (int e = 0; e < 32; ++e) u[e] = src[48 + 32 * (unit / 2) + e] >> (4 * (unit % 2));
    PackNibbles(u, c, group + at.nibbles + 256 * b);
  }
}

// Bytes per super-block of a K-quant's file layout.
size_t KQuantFileBlock(DType type) {
  return type == DType::kQ6_K   ? kQ6_KFileBlock
         : type == DType::kQ5_K ? kQ5_KFileBlock
                                : kQ4_KFileBlock;
}

// A K-quant row (Q6_K, Q4_K or Q5_K) into column c of group `group`, super-block after
// super-block.
void PackKQuantRow(DType type, const uint8_t* row, int64_t c, int64_t blocks, uint8_t* group) {
  for (int64_t sb = 0; sb < blocks / 8; ++sb) {
    const uint8_t* src = row + static_cast<size_t>(sb) * KQuantFileBlock(type);
    if (type == DType::kQ6_K) {
      PackQ6_KSuperBlock(src, c, sb, blocks, group);
    } else if (type == DType::kQ5_K) {
      PackQ5_KSuperBlock(src, c, sb, blocks, group);
    } else {
      PackQ4_KSuperBlock(src, c, sb, blocks, group);
    }
  }
}

bool IsKQuant(DType type) {
  return type == DType::kQ6_K || type == DType::kQ4_K || type == DType::kQ5_K;
}

}  // namespace

uint64_t PackedBytes(DType type, int64_t n_out, int64_t n_in) {
  const int64_t whole = IsKQuant(type) ? 256 : 32;  // values per file block
  if (!PackedSupportsType(type) || n_out < 1 || n_in < whole || n_in % whole != 0) return 0;
  return static_cast<uint64_t>(Groups(n_out)) * static_cast<uint64_t>(n_in / 32) *
         PackedBlockBytes(type);
}

void PackX16(DType type, const uint8_t* w, int64_t n_out, int64_t n_in, uint8_t* out) {
  const int64_t blocks = n_in / 32;
  if (IsKQuant(type)) {
    const size_t row_bytes = static_cast<size_t>(blocks / 8) * KQuantFileBlock(type);
    const size_t group_bytes = static_cast<size_t>(blocks) * PackedBlockBytes(type);
    std::memset(out, 0, static_cast<size_t>(Groups(n_out)) * group_bytes);  // high bits: ORed
    for (int64_t g = 0; g < Groups(n_out); ++g) {
      for (int64_t c = 0; c < kPackedColumns; ++c) {
        const int64_t row = std::min(g * kPackedColumns + c, n_out - 1);  // pad: the last row
        PackKQuantRow(type, w + static_cast<size_t>(row) * row_bytes, c, blocks,
                      out + static_cast<size_t>(g) * group_bytes);
      }
    }
    return;
  }
  const size_t file_block = GetDTypeInfo(type).block_bytes;
  const size_t row_bytes = static_cast<size_t>(blocks) * file_block;
  const size_t group_bytes = static_cast<size_t>(blocks) * PackedBlockBytes(type);
  const PackedLegacyLayout legacy =
      IsPackedLegacy(type) ? LegacyLayout(type) : PackedLegacyLayout{};
  for (int64_t g = 0; g < Groups(n_out); ++g) {
    uint8_t* group = out + static_cast<size_t>(g) * group_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t c = 0; c < kPackedColumns; ++c) {
        const int64_t row = std::min(g * kPackedColumns + c, n_out - 1);  // pad: the last row
        const uint8_t* src =
            w + static_cast<size_t>(row) * row_bytes + static_cast<size_t>(b) * file_block;
        const size_t block = static_cast<size_t>(b), n = static_cast<size_t>(blocks);
        if (type == DType::kQ8_0) {
          std::memcpy(group + block * kPackedScales + 2 * c, src, 2);
          PackQ8_0Quants(src, c, group + n * kPackedScales + block * 512);
        } else {
          uint8_t* high_bits = group + n * legacy.scales;
          uint8_t* nibbles = high_bits + n * legacy.high_bits;
          PackLegacyBlock(type, src, c, group + block * legacy.scales,
                          high_bits + block * legacy.high_bits, nibbles + block * kPackedNibbles);
        }
      }
    }
  }
}

Status PackedWeights::Build(const std::vector<Matrix>& matrices, Pages pages) {
  std::vector<Matrix> unique;
  for (const Matrix& m : matrices) {
    if (PackedBytes(m.type, m.n_out, m.n_in) == 0) continue;
    auto seen = std::find_if(unique.begin(), unique.end(),
                             [&](const Matrix& u) { return u.file == m.file; });
    if (seen == unique.end()) {
      unique.push_back(m);
    } else {
      seen->page_out_file = seen->page_out_file && m.page_out_file;
    }
  }
  bytes_ = 0;
  for (const Matrix& m : unique) {
    bytes_ += (PackedBytes(m.type, m.n_out, m.n_in) + kAlignment - 1) / kAlignment * kAlignment;
  }
  entries_.clear();
  storage_.Release();
  if (bytes_ == 0) return Status::Ok();
  STATICLM_RETURN_IF_ERROR(storage_.Allocate(bytes_, kAlignment, "the packed weights", pages));
  uint8_t* next = storage_.data();
  for (const Matrix& m : unique) {
    PackX16(m.type, m.file, m.n_out, m.n_in, next);
    if (m.page_out_file) {  // at once, so that the peak holds one matrix twice, not all
      PageOut(m.file, DTypeBytes(m.type, static_cast<uint64_t>(m.n_out * m.n_in)));
    }
    entries_.push_back({m.file, next});
    next += (PackedBytes(m.type, m.n_out, m.n_in) + kAlignment - 1) / kAlignment * kAlignment;
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.file < b.file; });
  return Status::Ok();
}

const uint8_t* PackedWeights::Find(const uint8_t* file) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), file,
                             [](const Entry& e, const uint8_t* f) { return e.file < f; });
  return it != entries_.end() && it->file == file ? it->packed : nullptr;
}

}  // namespace staticlm::cpu
