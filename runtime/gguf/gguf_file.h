// GgufFile: a validating reader of GGUF v2/v3 model files.
//
// The file is untrusted. Parse() checks every length, count, type, shape, offset and
// alignment before any of it is exposed, so after it succeeds every KeyValue and TensorInfo
// points at bytes that exist, every tensor lies inside the data section without overlapping
// another, and its type is one staticlm can run (contract/dtype.h). Errors are one line
// saying what is wrong and where (byte offset, key or tensor name).
//
// Weights are used in place: TensorInfo::data points into the mapping (or the borrowed
// bytes), never into a copy. All calls are init-phase calls; Open/Parse and the array
// getters allocate, lookups (FindKey, FindTensor) and scalar getters do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "contract/dtype.h"
#include "platform/file_map.h"
#include "platform/status.h"
#include "platform/stitched_map.h"
#include "runtime/gguf/gguf_types.h"

namespace staticlm::gguf {

struct KeyValue {
  std::string_view key;  // points into the file
  ValueType type = ValueType::kU8;
  ValueType array_type = ValueType::kU8;  // kArray only: the element type
  uint64_t array_count = 0;               // kArray only: the number of elements
  // The encoded value: for kArray its first element (after element type and count), for
  // kString the u64 length that precedes the bytes, otherwise the scalar itself.
  const uint8_t* value = nullptr;
  uint64_t value_bytes = 0;  // bytes from `value` to the end of the encoded value
};

struct TensorInfo {
  std::string_view name;  // points into the file
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ggml order: ne[0] is innermost (contiguous); unused are 1
  DType type = DType::kF32;
  uint64_t offset = 0;            // from the start of the data section; a multiple of alignment()
  uint64_t bytes = 0;             // ne[0] is a multiple of the type's block size, so this is exact
  const uint8_t* data = nullptr;  // tensor_data() + offset

  int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  GgufFile() = default;
  // Movable: the mapping itself does not move, so every view stays valid in the new
  // object; the moved-from object is left empty. Not copyable.
  GgufFile(GgufFile&& other) noexcept { *this = std::move(other); }
  GgufFile& operator=(GgufFile&& other) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  // Maps `path` read-only and parses it; the mapping lives as long as this object.
  // Errors: kIoError (cannot open or map), kFormatError (malformed), kUnsupported (version
  // or tensor type staticlm does not handle); messages start with the path.
  Status Open(const char* path);

  // Parses a GGUF header held in `header` (magic, metadata, tensor infos; no data section),
  // which this object keeps, and places its tensors in [data, data + data_bytes), memory the
  // caller keeps valid for this object's lifetime: how a Hugging Face folder's mapped
  // safetensors become the same model description a GGUF file gives (runtime/hf/hf_folder.h).
  // file_data() is then the header. Same errors as Parse.
  Status AdoptHeader(std::vector<uint8_t> header, const uint8_t* data, uint64_t data_bytes);

  // Parses borrowed bytes (tests, fuzzing). Does not copy or take ownership: `data` must
  // outlive this object. Same errors as Open, without the path.
  Status Parse(const uint8_t* data, size_t size);

  // Adds an F32 tensor of `count` values that the model implies but the file does not hold
  // (RoPE factors computed from linear or YaRN scaling metadata), placed in anonymous memory
  // right after the file's bytes, in the same address range, so that the tensor data span
  // (tensor_data(), tensor_data_bytes()) covers it: every backend then binds it with the
  // weights. The file is mapped again for that, so every view this object gave before is
  // invalid afterwards. `name` must have static storage. Only for a file that Open mapped,
  // once. Errors: kInternal (not an opened file, or called twice), kFormatError (a tensor of
  // that name exists), kIoError or kOutOfMemory from the mapping.
  Status AddComputedTensor(std::string_view name, const float* values, uint64_t count);

  // Lookups by exact name; nullptr when absent. Binary search over a sorted index.
  const KeyValue* FindKey(std::string_view key) const;
  const TensorInfo* FindTensor(std::string_view name) const;
  // As FindTensor, but a missing tensor is kFormatError "missing tensor 'X'".
  Status RequireTensor(std::string_view name, const TensorInfo** out) const;

  // Typed getters. A missing key is kFormatError "missing key 'X'"; a value of another type
  // (or one that does not fit) is kFormatError naming the key, the expected and found type.
  Status GetU32(std::string_view key, uint32_t* out) const;  // any integer type that fits
  Status GetI32(std::string_view key, int32_t* out) const;   // any integer type that fits
  Status GetU64(std::string_view key, uint64_t* out) const;  // any non-negative integer
  Status GetF32(std::string_view key, float* out) const;     // f32 or f64
  Status GetBool(std::string_view key, bool* out) const;
  Status GetString(std::string_view key, std::string_view* out) const;  // points into file
  // Array getters replace *out's contents (they allocate). Views point into the file.
  Status GetStringArray(std::string_view key, std::vector<std::string_view>* out) const;
  Status GetI32Array(std::string_view key, std::vector<int32_t>* out) const;  // any ints
  Status GetF32Array(std::string_view key, std::vector<float>* out) const;    // f32 or f64

  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order
  const std::vector<KeyValue>& keys() const { return keys_; }          // in file order

  const uint8_t* tensor_data() const { return tensor_data_; }
  uint64_t tensor_data_offset() const { return tensor_data_offset_; }  // from file start
  uint64_t tensor_data_bytes() const { return tensor_data_bytes_; }
  uint32_t alignment() const { return alignment_; }
  uint32_t version() const { return version_; }
  const uint8_t* file_data() const { return file_data_; }
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  Status ParseBytes(const uint8_t* data, size_t size);
  Status ParseHeaderBytes(const uint8_t* data, size_t size, uint64_t* infos_end);
  Status ReadAlignment();
  void Reset();

  FileMap map_;
  std::string path_;  // Open's, for AddComputedTensor's second mapping
  // AddComputedTensor's mapping, the file then the computed tensor (empty before: one call).
  StitchedMap stitched_;
  std::vector<uint8_t> owned_header_;  // AdoptHeader's bytes (a vector's move keeps them put)
  const uint8_t* file_data_ = nullptr;
  uint64_t file_bytes_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  const uint8_t* tensor_data_ = nullptr;
  uint64_t tensor_data_offset_ = 0;
  uint64_t tensor_data_bytes_ = 0;
  std::vector<KeyValue> keys_;
  std::vector<TensorInfo> tensors_;
  std::vector<uint32_t> key_order_;     // indices into keys_, sorted by key
  std::vector<uint32_t> tensor_order_;  // indices into tensors_, sorted by name
};

}  // namespace staticlm::gguf
