// GgufFile on hostile input: each malformed file is rejected with a one-line message that
// says what and where, and nothing crashes (run this under ASan/UBSan too).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>

#include "runtime/gguf/gguf_file.h"
#include "tests/support/gguf_samples.h"
#include "tests/support/gguf_writer.h"

namespace staticlm::gguf {
namespace {

using test::GgufWriter;

Status ParseBytes(const std::vector<uint8_t>& bytes) {
  GgufFile f;
  return f.Parse(bytes.data(), bytes.size());
}

Status ParseWriter(const GgufWriter& w) {
  return ParseBytes(w.Serialize());
}

template <typename T>
void Patch(std::vector<uint8_t>* bytes, size_t at, T v) {
  ASSERT_LE(at + sizeof(T), bytes->size());
  std::memcpy(bytes->data() + at, &v, sizeof(T));
}

::testing::AssertionResult Fails(const Status& s, StatusCode code, const char* needle) {
  if (s.ok()) return ::testing::AssertionFailure() << "parsed, expected \"" << needle << "\"";
  std::string message = s.message();
  if (s.code() != code) {
    return ::testing::AssertionFailure()
           << "code " << static_cast<int>(s.code()) << ": " << message;
  }
  if (message.find(needle) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message \"" << message << "\" lacks \"" << needle << "\"";
  }
  if (message.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "message is not one line: " << message;
  }
  return ::testing::AssertionSuccess() << message;
}

// A writer with one key and one F32 tensor of 8 elements, to which tests add the fault.
GgufWriter OneTensor(const std::vector<int64_t>& ne = {8}, uint32_t type = 0) {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddTensor("weight", ne, type, std::vector<uint8_t>(32, 0));
  return w;
}

TEST(GgufMalformed, EmptyAndMissingFiles) {
  EXPECT_TRUE(Fails(ParseBytes({}), StatusCode::kFormatError, "empty"));
  std::string empty = std::string(::testing::TempDir()) + "/gguf_empty." + std::to_string(getpid());
  ASSERT_TRUE(test::WriteBytes(empty.c_str(), {}).ok());
  GgufFile f;
  EXPECT_TRUE(Fails(f.Open(empty.c_str()), StatusCode::kFormatError, "empty"));
  std::remove(empty.c_str());
  Status s = f.Open("/nonexistent/dir/model.gguf");
  EXPECT_TRUE(Fails(s, StatusCode::kIoError, "/nonexistent/dir/model.gguf"));
}

TEST(GgufMalformed, WrongMagic) {
  std::vector<uint8_t> bytes = test::SampleGguf();
  bytes[0] = 'X';
  EXPECT_TRUE(Fails(ParseBytes(bytes), StatusCode::kFormatError, "not a GGUF file"));
  EXPECT_TRUE(Fails(ParseBytes({'G', 'G'}), StatusCode::kFormatError, "not a GGUF file"));
}

TEST(GgufMalformed, Versions) {
  GgufWriter w = test::SampleGgufWriter();
  w.SetVersion(1);
  EXPECT_TRUE(Fails(ParseWriter(w), StatusCode::kUnsupported, "GGUF version 1 is not supported"));
  w.SetVersion(99);
  EXPECT_TRUE(Fails(ParseWriter(w), StatusCode::kUnsupported, "GGUF version 99"));
  w.SetVersion(0x03000000);
  EXPECT_TRUE(Fails(ParseWriter(w), StatusCode::kUnsupported, "big-endian"));
}

TEST(GgufMalformed, EveryTruncationFails) {
  std::vector<uint8_t> bytes = test::SampleGguf();
  GgufFile full;
  ASSERT_TRUE(full.Parse(bytes.data(), bytes.size()).ok());
  // Bytes past the end of the last tensor are padding, which a file may lack.
  uint64_t needed = 0;
  for (const TensorInfo& t : full.tensors()) {
    needed = std::max(needed, full.tensor_data_offset() + t.offset + t.bytes);
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);  // exact size for ASan
    GgufFile f;
    Status s = f.Parse(prefix.data(), prefix.size());
    if (n < needed) {
      ASSERT_FALSE(s.ok()) << "prefix of " << n << " bytes parsed";
      ASSERT_EQ(s.code(), StatusCode::kFormatError) << s.message();
      ASSERT_EQ(std::string(s.message()).find('\n'), std::string::npos);
    } else {
      ASSERT_TRUE(s.ok()) << n << ": " << s.message();
    }
  }
}

TEST(GgufMalformed, StringLengthPastEnd) {
  std::vector<uint8_t> bytes = test::SampleGguf();
  Patch<uint64_t>(&bytes, 24, 1u << 30);  // the first key's name length
  EXPECT_TRUE(Fails(ParseBytes(bytes), StatusCode::kFormatError,
                    "key #0 at byte 24: name length 1073741824 exceeds"));

  GgufWriter w;
  w.AddString("general.name", "abc");
  std::vector<uint8_t> value = w.Serialize();
  // header 24, key length 8 + 12, type 4: the value's length is at byte 48.
  Patch<uint64_t>(&value, 48, ~uint64_t{0});
  EXPECT_TRUE(Fails(ParseBytes(value), StatusCode::kFormatError,
                    "key 'general.name' at byte 48: string length"));
}

TEST(GgufMalformed, HugeCounts) {
  std::vector<uint8_t> bytes = test::SampleGguf();
  Patch<uint64_t>(&bytes, 16, ~uint64_t{0});
  EXPECT_TRUE(Fails(ParseBytes(bytes), StatusCode::kFormatError, "kv_count"));
  bytes = test::SampleGguf();
  Patch<uint64_t>(&bytes, 8, uint64_t{1} << 62);
  EXPECT_TRUE(Fails(ParseBytes(bytes), StatusCode::kFormatError, "tensor_count"));

  GgufWriter w;
  std::vector<uint8_t> array = {static_cast<uint8_t>(ValueType::kString), 0, 0, 0};
  for (int i = 0; i < 8; ++i) array.push_back(0xff);  // count 2^64 - 1
  w.AddRaw("tokenizer.ggml.tokens", static_cast<uint32_t>(ValueType::kArray), array);
  EXPECT_TRUE(Fails(ParseWriter(w), StatusCode::kFormatError,
                    "key 'tokenizer.ggml.tokens' at byte 69: array of 18446744073709551615 "
                    "elements of type string"));
}

TEST(GgufMalformed, BadValues) {
  GgufWriter bad_type;
  bad_type.AddRaw("k", 13, {0, 0, 0, 0});
  EXPECT_TRUE(Fails(ParseWriter(bad_type), StatusCode::kFormatError,
                    "key 'k' at byte 33: value type 13 is not a GGUF type"));
  GgufWriter bad_bool;
  bad_bool.AddRaw("k", static_cast<uint32_t>(ValueType::kBool), {2});
  EXPECT_TRUE(Fails(ParseWriter(bad_bool), StatusCode::kFormatError, "bool value 2"));
  GgufWriter bad_bool_array;
  bad_bool_array.AddArray("k", ValueType::kBool, std::vector<uint8_t>{0, 1, 9});
  EXPECT_TRUE(Fails(ParseWriter(bad_bool_array), StatusCode::kFormatError, "bool value 9"));
  GgufWriter bad_element;
  bad_element.AddRaw("k", static_cast<uint32_t>(ValueType::kArray),
                     {77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_TRUE(Fails(ParseWriter(bad_element), StatusCode::kFormatError, "array element type 77"));
  GgufWriter empty_key;
  empty_key.AddU32("", 1);
  EXPECT_TRUE(Fails(ParseWriter(empty_key), StatusCode::kFormatError, "empty key name"));
}

TEST(GgufMalformed, NestingDepth) {
  // Arrays of arrays `depth` deep around one empty u8 array.
  // Each level is an element type (u32) and a count (u64): array of 1, ..., then u8 of 0.
  auto nested = [](int depth) {
    std::vector<uint8_t> v(12 * static_cast<size_t>(depth), 0);
    for (int i = 0; i < depth - 1; ++i) {
      v[12 * i] = static_cast<uint8_t>(ValueType::kArray);
      v[12 * i + 4] = 1;
    }
    return v;
  };
  GgufWriter ok;
  ok.AddRaw("k", static_cast<uint32_t>(ValueType::kArray), nested(kMaxArrayDepth));
  Status s = ParseWriter(ok);
  EXPECT_TRUE(s.ok()) << s.message();
  GgufWriter deep;
  deep.AddRaw("k", static_cast<uint32_t>(ValueType::kArray), nested(kMaxArrayDepth + 1));
  EXPECT_TRUE(Fails(ParseWriter(deep), StatusCode::kFormatError, "nested more than"));
}

TEST(GgufMalformed, DuplicateNames) {
  GgufWriter keys;
  keys.AddU32("a.b", 1);
  keys.AddU32("x", 1);
  keys.AddU32("a.b", 2);
  EXPECT_TRUE(Fails(ParseWriter(keys), StatusCode::kFormatError,
                    "duplicate key 'a.b' (entries #0 and #2)"));
  GgufWriter tensors = OneTensor();
  tensors.AddTensor("weight", {8}, DType::kF32, std::vector<uint8_t>(32, 0));
  EXPECT_TRUE(Fails(ParseWriter(tensors), StatusCode::kFormatError, "duplicate tensor 'weight'"));
}

TEST(GgufMalformed, BadShapes) {
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({1, 1, 1, 2, 4})), StatusCode::kFormatError,
                    "tensor 'weight' at byte 83: n_dims 5 is not in 1..4"));
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({})), StatusCode::kFormatError, "n_dims 0"));
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({8, 0})), StatusCode::kFormatError,
                    "tensor 'weight' at byte 95: ne[1] = 0 is not a positive int64"));
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({8, -1})), StatusCode::kFormatError, "ne[1]"));
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({int64_t{1} << 32, int64_t{1} << 32})),
                    StatusCode::kFormatError, "element count overflows int64 at ne[1]"));
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({int64_t{1} << 62, 1}, 0)), StatusCode::kFormatError,
                    "byte size"));
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({16, 2}, static_cast<uint32_t>(DType::kQ4_1))),
                    StatusCode::kFormatError, "ne[0] = 16 is not a multiple of Q4_1's block"));
  GgufWriter long_name;
  long_name.AddTensor(std::string(64, 'n'), {8}, DType::kF32, std::vector<uint8_t>(32, 0));
  EXPECT_TRUE(Fails(ParseWriter(long_name), StatusCode::kFormatError, "name length 64"));
}

TEST(GgufMalformed, BadOffsets) {
  GgufWriter unaligned = OneTensor();
  unaligned.OverrideTensorOffset(0, 4);
  EXPECT_TRUE(Fails(ParseWriter(unaligned), StatusCode::kFormatError,
                    "tensor 'weight': data offset 4 is not a multiple of the alignment 32"));
  GgufWriter outside = OneTensor();
  outside.OverrideTensorOffset(0, 32);
  EXPECT_TRUE(Fails(ParseWriter(outside), StatusCode::kFormatError,
                    "tensor 'weight': data [32, +32) lies outside the data section of 32 bytes"));
  GgufWriter far = OneTensor();
  far.OverrideTensorOffset(0, ~uint64_t{0} - 31);  // offset + bytes wraps around
  EXPECT_TRUE(Fails(ParseWriter(far), StatusCode::kFormatError, "lies outside"));
  GgufWriter overlap = OneTensor();
  overlap.AddTensor("second", {16}, DType::kF32, std::vector<uint8_t>(64, 0));
  overlap.OverrideTensorOffset(1, 0);
  EXPECT_TRUE(Fails(ParseWriter(overlap), StatusCode::kFormatError,
                    "tensors 'weight' [0, +32) and 'second' [0, +64) overlap"));
}

TEST(GgufMalformed, UnsupportedTensorTypes) {
  Status s = ParseWriter(OneTensor({256}, 11));
  EXPECT_TRUE(Fails(s, StatusCode::kUnsupported, "tensor 'weight' has type Q3_K (11)"));
  EXPECT_TRUE(Fails(ParseWriter(OneTensor({8}, 200)), StatusCode::kUnsupported,
                    "tensor 'weight' has unknown ggml type 200"));
}

TEST(GgufMalformed, BadAlignment) {
  const uint32_t bad[] = {0, 3, 48};
  for (uint32_t a : bad) {
    GgufWriter w = OneTensor();
    w.AddU32("general.alignment", a);
    EXPECT_TRUE(Fails(ParseWriter(w), StatusCode::kFormatError, "not a power of two")) << a;
  }
  GgufWriter wrong_type = OneTensor();
  wrong_type.AddU64("general.alignment", 64);
  EXPECT_TRUE(Fails(ParseWriter(wrong_type), StatusCode::kFormatError,
                    "key 'general.alignment': expected u32, found u64"));
}

TEST(GgufMalformed, HostileNamesPrintSafely) {
  GgufWriter w;
  w.AddRaw(std::string("bad\nkey") + std::string(100, 'x'), 13, {0, 0, 0, 0});
  Status s = ParseWriter(w);
  ASSERT_FALSE(s.ok());
  std::string message = s.message();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("key 'bad?keyxxx"), std::string::npos) << message;
  EXPECT_NE(message.find("...'"), std::string::npos) << message;
}

volatile uint64_t g_sink = 0;  // keeps the reads below from being optimized away

// Exercises everything a caller might read after a successful parse.
void ReadEverything(const GgufFile& f) {
  std::vector<std::string_view> strings;
  std::vector<int32_t> ints;
  std::vector<float> floats;
  uint64_t sum = 0;
  for (const KeyValue& kv : f.keys()) {
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    float f32;
    bool b;
    std::string_view str;
    (void)f.GetU32(kv.key, &u32);
    (void)f.GetI32(kv.key, &i32);
    (void)f.GetU64(kv.key, &u64);
    (void)f.GetF32(kv.key, &f32);
    (void)f.GetBool(kv.key, &b);
    if (f.GetString(kv.key, &str).ok()) sum += str.size();
    if (f.GetStringArray(kv.key, &strings).ok()) {
      for (std::string_view s : strings) sum += s.empty() ? 0 : static_cast<uint8_t>(s.back());
    }
    (void)f.GetI32Array(kv.key, &ints);
    (void)f.GetF32Array(kv.key, &floats);
  }
  for (const TensorInfo& t : f.tensors()) {
    if (t.bytes > 0) sum += t.data[0] + t.data[t.bytes - 1];
  }
  g_sink = g_sink + sum;
}

TEST(GgufMalformed, RandomByteFlipsNeverCrash) {
  const std::vector<uint8_t> original = test::SampleGguf();
  // Flip bytes only in the header and infos; the data section's bytes are opaque.
  GgufFile whole;
  ASSERT_TRUE(whole.Parse(original.data(), original.size()).ok());
  const size_t structured = whole.tensor_data_offset();
  std::mt19937_64 rng(12345);
  int parsed = 0;
  constexpr int kIterations = 4000;
  for (int i = 0; i < kIterations; ++i) {
    std::vector<uint8_t> bytes = original;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % structured;
      // Mostly single-bit flips, sometimes a whole random byte (e.g. 0xff in a length).
      if (rng() % 4 == 0) {
        bytes[at] = static_cast<uint8_t>(rng());
      } else {
        bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
    }
    GgufFile f;
    Status s = f.Parse(bytes.data(), bytes.size());
    if (s.ok()) {
      ++parsed;
      ReadEverything(f);
    } else {
      ASSERT_EQ(std::string(s.message()).find('\n'), std::string::npos) << s.message();
    }
  }
  // Some flips land in values (e.g. an integer), which stay valid; most break structure.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, kIterations);
}

}  // namespace
}  // namespace staticlm::gguf
