#include "tests/support/gguf_samples.h"

#include <cstring>

namespace staticlm::test {

namespace {

using gguf::ValueType;

std::vector<uint8_t> SampleData(size_t index, uint64_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = SampleTensorByte(index, i);
  return data;
}

// An array of two arrays: [[1, 2] as u16, [] as i8].
std::vector<uint8_t> NestedArray() {
  std::vector<uint8_t> v;
  auto put = [&v](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    v.insert(v.end(), b, b + n);
  };
  uint32_t array = static_cast<uint32_t>(ValueType::kArray);
  uint32_t u16 = static_cast<uint32_t>(ValueType::kU16);
  uint32_t i8 = static_cast<uint32_t>(ValueType::kI8);
  uint64_t two = 2;
  uint64_t zero = 0;
  uint16_t elems[2] = {1, 2};
  put(&array, 4);
  put(&two, 8);
  put(&u16, 4);
  put(&two, 8);
  put(elems, 4);
  put(&i8, 4);
  put(&zero, 8);
  return v;
}

}  // namespace

uint8_t SampleTensorByte(size_t tensor_index, size_t byte) {
  return static_cast<uint8_t>((tensor_index * 37 + byte) & 0xff);
}

GgufWriter SampleGgufWriter() {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddU8("t.u8", 200);
  w.AddI8("t.i8", -100);
  w.AddU16("t.u16", 60000);
  w.AddI16("t.i16", -30000);
  w.AddU32("t.u32", 4000000000u);
  w.AddI32("t.i32", -2000000000);
  w.AddF32("t.f32", 1.5f);
  w.AddBool("t.bool", true);
  w.AddU64("t.u64", uint64_t{1} << 40);
  w.AddI64("t.i64", -(int64_t{1} << 40));
  w.AddF64("t.f64", 2.25);
  w.AddString("t.string", "héllo");
  w.AddString("t.empty_string", "");
  w.AddStringArray("t.strings", {"a", "bc", "", "Ġthe"});
  w.AddArray("t.u8s", ValueType::kU8, std::vector<uint8_t>{1, 2, 255});
  w.AddArray("t.i32s", ValueType::kI32, std::vector<int32_t>{-1, 0, 7});
  w.AddArray("t.f32s", ValueType::kF32, std::vector<float>{0.5f, -2.0f});
  w.AddArray("t.f64s", ValueType::kF64, std::vector<double>{0.25, 1e3});
  w.AddArray("t.bools", ValueType::kBool, std::vector<uint8_t>{1, 0, 1});
  w.AddArray("t.empty", ValueType::kU32, std::vector<uint32_t>{});
  w.AddRaw("t.nested", static_cast<uint32_t>(ValueType::kArray), NestedArray());

  struct Spec {
    const char* name;
    std::vector<int64_t> ne;
    DType type;
  };
  const Spec specs[] = {
      {"t_f32", {4, 2}, DType::kF32}, {"t_f16", {8}, DType::kF16},
      {"t_bf16", {4}, DType::kBF16},  {"t_q8_0", {32, 2}, DType::kQ8_0},
      {"t_q4_0", {32}, DType::kQ4_0}, {"t_q4_1", {64}, DType::kQ4_1},
      {"t_i32", {3}, DType::kI32},
  };
  size_t index = 0;
  for (const Spec& s : specs) {
    uint64_t elements = 1;
    for (int64_t d : s.ne) elements *= static_cast<uint64_t>(d);
    w.AddTensor(s.name, s.ne, s.type, SampleData(index++, DTypeBytes(s.type, elements)));
  }
  return w;
}

std::vector<uint8_t> SampleGguf() {
  return SampleGgufWriter().Serialize();
}

}  // namespace staticlm::test
