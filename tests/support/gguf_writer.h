// GgufWriter: builds GGUF files in memory for tests, including malformed ones. It writes
// exactly what it is told (any version, type id, shape or offset), so tests can produce the
// hostile inputs the reader must reject. Test-only code: allocates freely.
//
// Also declares WriteTinyLlama (tiny_llama.cpp): a small random-weight Llama model with
// SmolLM2's tokenizer metadata that the real runtime can load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "contract/dtype.h"
#include "platform/status.h"
#include "runtime/gguf/gguf_types.h"

namespace staticlm::test {

class GgufWriter {
 public:
  // Defaults: version 3, alignment 32 (no general.alignment key written).
  void SetVersion(uint32_t version) { version_ = version; }
  // Pads tensor data to `alignment` and writes general.alignment = alignment (u32) after the
  // other keys. To write an inconsistent value instead, add the key with AddU32.
  void SetAlignment(uint32_t alignment);

  void AddU8(const std::string& key, uint8_t v) { AddScalar(key, gguf::ValueType::kU8, &v, 1); }
  void AddI8(const std::string& key, int8_t v) { AddScalar(key, gguf::ValueType::kI8, &v, 1); }
  void AddU16(const std::string& key, uint16_t v) { AddScalar(key, gguf::ValueType::kU16, &v, 2); }
  void AddI16(const std::string& key, int16_t v) { AddScalar(key, gguf::ValueType::kI16, &v, 2); }
  void AddU32(const std::string& key, uint32_t v) { AddScalar(key, gguf::ValueType::kU32, &v, 4); }
  void AddI32(const std::string& key, int32_t v) { AddScalar(key, gguf::ValueType::kI32, &v, 4); }
  void AddF32(const std::string& key, float v) { AddScalar(key, gguf::ValueType::kF32, &v, 4); }
  void AddU64(const std::string& key, uint64_t v) { AddScalar(key, gguf::ValueType::kU64, &v, 8); }
  void AddI64(const std::string& key, int64_t v) { AddScalar(key, gguf::ValueType::kI64, &v, 8); }
  void AddF64(const std::string& key, double v) { AddScalar(key, gguf::ValueType::kF64, &v, 8); }
  void AddBool(const std::string& key, bool v);
  void AddString(const std::string& key, const std::string& v);
  void AddStringArray(const std::string& key, const std::vector<std::string>& v);
  // A numeric array: `count` elements of `element_type` (a fixed-size type), copied raw.
  void AddArray(const std::string& key, gguf::ValueType element_type, const void* elements,
                uint64_t count);
  template <typename T>
  void AddArray(const std::string& key, gguf::ValueType element_type, const std::vector<T>& v) {
    AddArray(key, element_type, v.data(), v.size());
  }
  // Any value type id with its encoded bytes as given (nested arrays, bad bools, ...).
  void AddRaw(const std::string& key, uint32_t type, std::vector<uint8_t> encoded);

  // A tensor with ggml dims `ne` (ne[0] innermost; any count, any values), ggml type id
  // `type` and raw data bytes, placed after the previous tensor at the next aligned offset.
  // Returns its index.
  size_t AddTensor(const std::string& name, const std::vector<int64_t>& ne, uint32_t type,
                   std::vector<uint8_t> data);
  size_t AddTensor(const std::string& name, const std::vector<int64_t>& ne, DType type,
                   std::vector<uint8_t> data) {
    return AddTensor(name, ne, static_cast<uint32_t>(type), std::move(data));
  }
  // Writes `offset` in tensor `index`'s info instead of where its data really is.
  void OverrideTensorOffset(size_t index, uint64_t offset);

  // The whole file. Header layout (for tests that patch bytes): magic [0,4), version [4,8),
  // tensor_count [8,16), kv_count [16,24), first key's length [24,32).
  std::vector<uint8_t> Serialize() const;
  // Offset of the data section in Serialize()'s output.
  uint64_t DataSectionOffset() const;
  Status WriteFile(const char* path) const;

 private:
  struct Kv {
    std::string key;
    uint32_t type;
    std::vector<uint8_t> encoded;
  };
  struct Tensor {
    std::string name;
    std::vector<int64_t> ne;
    uint32_t type;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset_override;
  };

  void AddScalar(const std::string& key, gguf::ValueType type, const void* v, size_t bytes);
  std::vector<Kv> AllKeys() const;
  std::vector<uint64_t> DataOffsets() const;
  void AppendHeaderAndInfos(std::vector<uint8_t>* out) const;

  uint32_t version_ = 3;
  uint32_t alignment_ = gguf::kDefaultAlignment;
  bool write_alignment_key_ = false;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

// Writes a whole file; kIoError when it cannot.
Status WriteBytes(const char* path, const std::vector<uint8_t>& bytes);

struct TinyLlamaOptions {
  uint32_t block_count = 2;
  uint32_t embedding_length = 64;
  uint32_t head_count = 4;
  uint32_t head_count_kv = 2;
  uint32_t feed_forward_length = 96;
  uint32_t context_length = 256;
  float rope_freq_base = 10000.0f;
  float rms_epsilon = 1e-5f;
  // llama.rope.dimension_count: 0 for the head size; less for partial RoPE.
  uint32_t rope_dimension_count = 0;
  // Layer matrices; token_embd (and output.weight) use embedding_type. Norms are always F32.
  // Quantized types need embedding_length and feed_forward_length multiples of 32.
  DType weight_type = DType::kF32;
  DType embedding_type = DType::kF32;
  bool untied_output = false;   // also write output.weight (the real model ties it)
  float matrix_stddev = 0.05f;  // weights ~ N(0, stddev)
  float norm_jitter = 0.1f;     // norm weights ~ 1 + U(-jitter, jitter)
  uint64_t seed = 1;
  uint32_t alignment = gguf::kDefaultAlignment;
  // tokenizer.chat_template: nullptr for SmolLM2's; "" to leave the key out.
  const char* chat_template = nullptr;
};

// The tiny model's vocabulary, in id order: SmolLM2's 17 special tokens, the 256 GPT-2
// byte-level characters, then the merged tokens of TinyLlamaMerges().
std::vector<std::string> TinyLlamaTokens();
// SmolLM2's first merges (in rank order), each "left right".
std::vector<std::string> TinyLlamaMerges();
// SmolLM2-135M-Instruct's tokenizer.chat_template, verbatim.
const char* SmolLM2ChatTemplate();

// Builds the tiny model (deterministic for a given options.seed).
Status BuildTinyLlama(const TinyLlamaOptions& options, GgufWriter* writer);
// Builds it and writes it to `path`.
Status WriteTinyLlama(const char* path, const TinyLlamaOptions& options = {});

}  // namespace staticlm::test
