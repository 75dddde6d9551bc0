// Every tensor of the real Gemma 3 270M file (Q4_K_M: F32, Q5_0, Q4_K, Q8_0 and Q6_K tensors),
// read with staticlm's GGUF reader and decoded with DequantizeRow, against digests of what
// gguf-py (gguf.GGUFReader + gguf.quants.dequantize, the oracle) decodes from the same file:
// tests/golden/gemma3_dequant_digests.txt, written by tests/reference/make_quant_golden.py.
// Skips when the model file is absent (scripts/fetch-model gemma3-270m fetches it).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/dequantize.h"
#include "runtime/gguf/gguf_file.h"

namespace staticlm {
namespace {

constexpr const char* kModelName = "gemma-3-270m-q4_k_m.gguf";
constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ull;

struct Expected {
  std::string type;
  int64_t elements = 0;
  uint64_t digest = 0;
};

std::string ModelPath() {
  std::string dir = STATICLM_DEFAULT_MODEL;  // the model folder holds every fetched model
  return dir.substr(0, dir.find_last_of('/') + 1) + kModelName;
}

std::map<std::string, Expected> ReadDigests() {
  std::ifstream in(std::string(STATICLM_GOLDEN_DIR) + "/gemma3_dequant_digests.txt");
  std::map<std::string, Expected> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name, digest;
    Expected e;
    words >> name >> e.type >> e.elements >> digest;
    e.digest = std::stoull(digest, nullptr, 16);
    out[name] = e;
  }
  return out;
}

// The script's digest: h = h · K + (b ^ (b >> 16)) mod 2^64 over the bits b of each value.
uint64_t Fold(uint64_t h, const float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, &values[i], sizeof(b));
    h = h * kMultiplier + (b ^ (b >> 16));
  }
  return h;
}

uint64_t DigestOf(const gguf::TensorInfo& t, std::vector<float>* row) {
  const int64_t width = t.ne[0];
  const int64_t rows = t.elements() / width;
  const uint64_t row_bytes = DTypeBytes(t.type, static_cast<uint64_t>(width));
  row->resize(static_cast<size_t>(width));
  uint64_t h = 0;
  for (int64_t r = 0; r < rows; ++r) {
    cpu::DequantizeRow(t.type, t.data + static_cast<uint64_t>(r) * row_bytes, width, row->data());
    h = Fold(h, row->data(), width);
  }
  return h;
}

TEST(Gemma3DequantTest, EveryTensorDecodesAsGgufPyDecodesIt) {
  const std::string path = ModelPath();
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
  } else {
    std::printf("skipping: no model at %s (scripts/fetch-model gemma3-270m)\n", path.c_str());
    GTEST_SKIP() << "no model at " << path;
  }
  gguf::GgufFile file;
  const Status opened = file.Open(path.c_str());
  ASSERT_TRUE(opened.ok()) << opened.message();
  const std::map<std::string, Expected> expected = ReadDigests();
  ASSERT_EQ(expected.size(), file.tensors().size()) << "tensor count of the golden vs the file";

  std::map<std::string, int> per_type;
  std::vector<float> row;
  for (const gguf::TensorInfo& t : file.tensors()) {
    const std::string name(t.name);
    SCOPED_TRACE(name);
    auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << "not in the golden";
    EXPECT_EQ(it->second.type, DTypeName(t.type));
    EXPECT_EQ(it->second.elements, t.elements());
    char got[17];
    std::snprintf(got, sizeof(got), "%016llx", static_cast<unsigned long long>(DigestOf(t, &row)));
    char want[17];
    std::snprintf(want, sizeof(want), "%016llx",
                  static_cast<unsigned long long>(it->second.digest));
    EXPECT_STREQ(got, want) << DTypeName(t.type) << " tensor decodes differently from gguf-py";
    ++per_type[DTypeName(t.type)];
  }
  // The file's mix, so that a re-quantized file cannot silently drop a type from the test.
  EXPECT_EQ(per_type["Q5_0"], 81);
  EXPECT_EQ(per_type["Q4_K"], 27);
  EXPECT_EQ(per_type["Q6_K"], 9);
  EXPECT_EQ(per_type["Q8_0"], 10);
  EXPECT_EQ(per_type["F32"], 109);
}

}  // namespace
}  // namespace staticlm
