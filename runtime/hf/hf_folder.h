// HfFolder: a Hugging Face model folder (config.json plus model.safetensors, or shards listed
// by model.safetensors.index.json; F32, F16 or BF16 tensors) made into the same model
// description a GGUF file gives — a gguf::GgufFile with the metadata keys and tensor names
// llama.cpp's converter would write — so that ReadModelConfig, the plan builder and the
// backends need no second path.
//
// Memory: the shards are mapped read-only, one after another in one reserved address range
// (platform/stitched_map.h), and tensors used as stored are used in place. What the converter
// would have computed is made once at init in a writable tail of the same range, then sealed
// read-only: norms and biases in F32 (Gemma's norms plus one), tensors not 4-byte aligned,
// Llama 3's rope_freqs from rope_scaling, and with a quantization every matrix in that type.
// With a quantization the weights buffer is the tail alone and the shards are unmapped after
// init. Differences the model description cannot express are in FolderTraits.
//
// The tensors are not permuted: safetensors' q and k rows are in transformers' order, so a
// folder's RoPE rotates halves (ModelConfig::rope_halves) whatever the family's GGUF does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "contract/dtype.h"
#include "platform/status.h"
#include "platform/stitched_map.h"
#include "runtime/gguf/gguf_file.h"

namespace staticlm::hf {

// True when `path` names a directory (a folder to load with HfFolder).
bool IsDirectory(const char* path);

// The weight types --quantize accepts: "q8_0", "q4_0", "q4_k" (rows that are not whole 256-value
// blocks as Q4_0); kInvalidArgument naming --quantize for
// others. nullptr or "" (no quantization) sets *out = kF32 and *quantize = false.
Status ParseQuantizeName(const char* name, DType* out, bool* quantize);

class HfFolder {
 public:
  // Init: reads `dir` and fills `file`, whose tensors point into this object's mapping (it
  // must outlive `file`). `quantize`: as ParseQuantizeName. Errors name the file (and key or
  // tensor) at fault.
  Status Open(const char* dir, const char* quantize, gguf::GgufFile* file);

  // Fingerprint of config.json, every shard's bytes and the quantization (computed by Open).
  uint64_t fingerprint() const { return fingerprint_; }
  size_t shard_count() const { return shard_count_; }
  uint64_t stored_bytes() const { return stored_bytes_; }  // config.json and the shards

 private:
  StitchedMap map_;
  uint64_t fingerprint_ = 0;
  size_t shard_count_ = 0;
  uint64_t stored_bytes_ = 0;
};

// A GGUF file or a folder, by what `path` is: the one entry point for every command that reads
// a model. `folder` is left unused for a GGUF file.
Status OpenModelDescription(const char* path, const char* quantize, HfFolder* folder,
                            gguf::GgufFile* file);

}  // namespace staticlm::hf
