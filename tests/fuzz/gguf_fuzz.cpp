// libFuzzer target for the GGUF reader. Not part of the default build; build and run with
// clang from the repository root:
//
//   clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -I. \
//       tests/fuzz/gguf_fuzz.cpp runtime/gguf/*.cpp platform/file_map.cpp -o /tmp/gguf_fuzz
//   mkdir -p /tmp/gguf_corpus && /tmp/gguf_fuzz -max_len=4096 /tmp/gguf_corpus
//
// Seed the corpus with small valid files (e.g. the bytes of test::SampleGguf() or a tiny
// model from WriteTinyLlama) to reach past the header quickly.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace staticlm::gguf;
  GgufFile f;
  if (!f.Parse(data, size).ok()) return 0;
  // After a successful parse every view must be readable.
  std::vector<std::string_view> strings;
  std::vector<int32_t> ints;
  std::vector<float> floats;
  volatile uint8_t sink = 0;
  for (const KeyValue& kv : f.keys()) {
    uint32_t u32;
    float f32;
    std::string_view s;
    (void)f.GetU32(kv.key, &u32);
    (void)f.GetF32(kv.key, &f32);
    if (f.GetString(kv.key, &s).ok() && !s.empty()) sink = sink ^ static_cast<uint8_t>(s.back());
    if (f.GetStringArray(kv.key, &strings).ok()) {
      for (std::string_view e : strings) {
        if (!e.empty()) sink = sink ^ static_cast<uint8_t>(e.back());
      }
    }
    (void)f.GetI32Array(kv.key, &ints);
    (void)f.GetF32Array(kv.key, &floats);
  }
  for (const TensorInfo& t : f.tensors()) sink = sink ^ t.data[0] ^ t.data[t.bytes - 1];
  return 0;
}
