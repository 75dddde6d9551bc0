#include "runtime/hf/hf_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string_view>

#include "platform/file_map.h"
#include "runtime/hf/gguf_header_builder.h"
#include "runtime/hf/hf_config.h"
#include "runtime/hf/hf_shards.h"
#include "runtime/hf/hf_tensor_names.h"
#include "runtime/hf/safetensors_header.h"
#include "runtime/hf/weight_convert.h"
#include "runtime/model/model_hash.h"

namespace staticlm::hf {
namespace {

// Tail tensors start at multiples of this (the GGUF default alignment).
constexpr uint64_t kTailAlignment = 32;

// How one tensor reaches the weights buffer.
enum class Placement { kInPlace, kToF32, kQuantize, kCopy, kSynthesized };

struct PlannedTensor {
  std::string name;  // GGUF name
  int64_t ne[4] = {1, 1, 1, 1};
  uint32_t n_dims = 0;
  DType type = DType::kF32;  // as placed
  Placement placement = Placement::kInPlace;
  const Shard* shard = nullptr;
  const SafetensorsEntry* entry = nullptr;
  size_t extra = 0;     // kSynthesized: the index in HfConfig::extra_tensors
  uint64_t offset = 0;  // from the start of the stitched map
  uint64_t bytes = 0;
};

// RMSNorm weights (GGUF names: attn_norm, ffn_norm, attn_q_norm, output_norm, …).
bool IsNormName(const std::string& name) {
  constexpr std::string_view kSuffix = "_norm.weight";
  return name.size() > kSuffix.size() &&
         std::string_view(name).substr(name.size() - kSuffix.size()) == kSuffix;
}

uint64_t RoundUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

class FolderBuilder {
 public:
  FolderBuilder(const char* dir, DType quant, bool quantize, StitchedMap* map)
      : dir_(dir), quant_(quant), quantize_(quantize), map_(*map) {}

  Status Build(gguf::GgufFile* file, uint64_t* fingerprint, size_t* shards, uint64_t* bytes);

 private:
  Status MapShards();
  Status PlanTensors();
  Status PlanTensor(const Shard& shard, const SafetensorsEntry& e);
  void PlanSynthesized();
  void AddToTail(PlannedTensor* t);
  DType QuantizedType(int64_t row) const;
  Status FillTail();
  void FillTensor(const PlannedTensor& t, uint8_t* out) const;
  uint64_t Fingerprint() const;

  const char* dir_;
  DType quant_;
  bool quantize_;
  StitchedMap& map_;
  FileMap config_map_;
  std::string_view config_text_;
  HfConfig config_;
  GgufHeaderBuilder header_;
  std::vector<Shard> shards_;
  std::vector<PlannedTensor> tensors_;
  uint64_t shards_end_ = 0;  // where the tail starts (page-aligned)
  uint64_t tail_bytes_ = 0;
};

Status FolderBuilder::MapShards() {
  const uint64_t page = StitchedMap::PageBytes();
  uint64_t offset = 0;
  for (Shard& s : shards_) {
    s.offset = offset;
    offset += RoundUp(s.bytes, page);
  }
  shards_end_ = offset;
  // Room for any tail: at most every tensor in F32, twice the shards' 2-byte values.
  STATICLM_RETURN_IF_ERROR(map_.Reserve(shards_end_ + 2 * shards_end_ + 4 * page));
  for (Shard& s : shards_) {
    STATICLM_RETURN_IF_ERROR(map_.MapFile(s.path.c_str(), s.offset, s.bytes));
    STATICLM_RETURN_IF_ERROR(
        ParseSafetensorsHeader(map_.data() + s.offset, s.bytes, s.path.c_str(), &s.header));
    STATICLM_RETURN_IF_ERROR(CheckListedTensors(s));
  }
  return Status::Ok();
}

// The type a matrix of `row`-value rows is quantized to: the one asked for when rows are whole
// blocks; for Q4_K's 256-value blocks, else Q4_0 (as llama-quantize falls back to a 32-value
// type); kF32 when neither fits (the matrix is kept as stored).
DType FolderBuilder::QuantizedType(int64_t row) const {
  if (row % GetDTypeInfo(quant_).block_elements == 0) return quant_;
  if (quant_ == DType::kQ4_K && row % 32 == 0) return DType::kQ4_0;
  return DType::kF32;
}

void FolderBuilder::AddToTail(PlannedTensor* t) {
  const uint64_t elements = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
  t->bytes = DTypeBytes(t->type, elements);
  t->offset = shards_end_ + tail_bytes_;
  tail_bytes_ = RoundUp(tail_bytes_ + t->bytes, kTailAlignment);
}

Status FolderBuilder::PlanTensor(const Shard& shard, const SafetensorsEntry& e) {
  PlannedTensor t;
  TensorNameMatch match = MapTensorName(e.name, config_.arch, &t.name);
  if (match == TensorNameMatch::kIgnored) return Status::Ok();
  if (match == TensorNameMatch::kUnknown) {
    return Status::Error(StatusCode::kUnsupported,
                         "%s: tensor '%.80s' is not one staticlm maps for %s", shard.path.c_str(),
                         e.name.c_str(), config_.model_type.c_str());
  }
  if (e.n_dims < 1 || e.n_dims > 2) {
    return Status::Error(StatusCode::kFormatError,
                         "%s: tensor '%.80s' has %u dims, expected 1 or 2", shard.path.c_str(),
                         e.name.c_str(), e.n_dims);
  }
  t.n_dims = e.n_dims;
  for (uint32_t d = 0; d < e.n_dims; ++d) t.ne[d] = e.shape[e.n_dims - 1 - d];  // ggml order
  t.shard = &shard;
  t.entry = &e;
  t.type = e.dtype;
  const uint64_t at = shard.offset + shard.header.data_start + e.begin;
  const bool is_norm = IsNormName(t.name);
  if (e.n_dims == 1) {
    // The plan reads norms and biases as F32; Gemma's norms are stored minus one.
    const bool as_stored = e.dtype == DType::kF32 && at % 4 == 0 && !quantize_ &&
                           !(is_norm && config_.norm_offset != 0.0f);
    t.placement = as_stored ? Placement::kInPlace : Placement::kToF32;
    t.type = DType::kF32;
  } else if (quantize_ && QuantizedType(t.ne[0]) != DType::kF32) {
    t.placement = Placement::kQuantize;
    t.type = QuantizedType(t.ne[0]);
  } else {
    t.placement = at % 4 == 0 && !quantize_ ? Placement::kInPlace : Placement::kCopy;
  }
  if (t.placement == Placement::kInPlace) {
    t.offset = at;
    t.bytes = e.end - e.begin;
  } else {
    AddToTail(&t);
  }
  tensors_.push_back(std::move(t));
  return Status::Ok();
}

// The tensors the converter computes from the config (HfConfig::extra_tensors).
void FolderBuilder::PlanSynthesized() {
  for (size_t i = 0; i < config_.extra_tensors.size(); ++i) {
    PlannedTensor t;
    t.name = config_.extra_tensors[i].name;
    t.n_dims = 1;
    t.ne[0] = static_cast<int64_t>(config_.extra_tensors[i].values.size());
    t.type = DType::kF32;
    t.placement = Placement::kSynthesized;
    t.extra = i;
    AddToTail(&t);
    tensors_.push_back(std::move(t));
  }
}

Status FolderBuilder::PlanTensors() {
  std::set<std::string_view> seen;
  for (const Shard& s : shards_) {
    for (const SafetensorsEntry& e : s.header.tensors) {
      if (!seen.insert(e.name).second) {
        return Status::Error(StatusCode::kFormatError, "%s: tensor '%.80s' is in two shards",
                             s.path.c_str(), e.name.c_str());
      }
      STATICLM_RETURN_IF_ERROR(PlanTensor(s, e));
    }
  }
  PlanSynthesized();
  const bool has_head = seen.count("lm_head.weight") != 0;
  if (!config_.tied_embeddings && !has_head) {
    return Status::Error(StatusCode::kFormatError,
                         "%s: no tensor 'lm_head.weight', and config.json's tie_word_embeddings "
                         "is false",
                         dir_);
  }
  return Status::Ok();
}

void FolderBuilder::FillTensor(const PlannedTensor& t, uint8_t* out) const {
  if (t.placement == Placement::kSynthesized) {
    const std::vector<float>& values = config_.extra_tensors[t.extra].values;
    std::memcpy(out, values.data(), values.size() * sizeof(float));
    return;
  }
  const uint8_t* src = map_.data() + t.shard->offset + t.shard->header.data_start + t.entry->begin;
  if (t.placement == Placement::kCopy) {
    std::memcpy(out, src, t.bytes);
    return;
  }
  const int64_t row = t.ne[0], rows = t.ne[1];
  std::vector<float> values(static_cast<size_t>(row));
  const uint64_t in_row = DTypeBytes(t.entry->dtype, row), out_row = DTypeBytes(t.type, row);
  const bool is_norm = IsNormName(t.name);
  for (int64_t r = 0; r < rows; ++r) {
    ToF32(t.entry->dtype, src + r * in_row, row, values.data());
    if (t.placement == Placement::kToF32) {
      if (is_norm)
        for (float& v : values) v += config_.norm_offset;
      std::memcpy(out + r * out_row, values.data(), out_row);
    } else {
      QuantizeRow(t.type, values.data(), row, out + r * out_row);
    }
  }
}

Status FolderBuilder::FillTail() {
  const uint64_t page = StitchedMap::PageBytes();
  const uint64_t tail = RoundUp(tail_bytes_, page);
  STATICLM_RETURN_IF_ERROR(map_.MapAnonymous(shards_end_, tail));
  for (const PlannedTensor& t : tensors_) {
    if (t.placement != Placement::kInPlace) FillTensor(t, map_.data() + t.offset);
  }
  return map_.Seal(shards_end_, tail);
}

uint64_t FolderBuilder::Fingerprint() const {
  std::vector<uint64_t> parts;
  parts.push_back(
      FingerprintBytes(reinterpret_cast<const uint8_t*>(config_text_.data()), config_text_.size()));
  for (const Shard& s : shards_) parts.push_back(FingerprintBytes(map_.data() + s.offset, s.bytes));
  parts.push_back(quantize_ ? static_cast<uint64_t>(quant_) + 1 : 0);
  return FingerprintBytes(reinterpret_cast<const uint8_t*>(parts.data()), parts.size() * 8);
}

Status FolderBuilder::Build(gguf::GgufFile* file, uint64_t* fingerprint, size_t* shards,
                            uint64_t* bytes) {
  const std::string config_path = JoinPath(dir_, "config.json");
  STATICLM_RETURN_IF_ERROR(ReadText(config_path, &config_map_, &config_text_));
  STATICLM_RETURN_IF_ERROR(ReadHfConfig(config_text_, config_path.c_str(), &config_, &header_));
  header_.AddU32("general.alignment", 4);
  STATICLM_RETURN_IF_ERROR(FindShards(dir_, &shards_));
  STATICLM_RETURN_IF_ERROR(MapShards());
  STATICLM_RETURN_IF_ERROR(PlanTensors());
  STATICLM_RETURN_IF_ERROR(FillTail());
  *fingerprint = Fingerprint();
  *shards = shards_.size();
  *bytes = config_text_.size();
  for (const Shard& s : shards_) *bytes += s.bytes;
  // With a quantization every tensor is in the tail: the buffer starts there, and the shards'
  // pages are given back.
  const uint64_t base = quantize_ ? shards_end_ : 0;
  for (const PlannedTensor& t : tensors_) {
    header_.AddTensor(t.name, t.ne, t.n_dims, t.type, t.offset - base);
  }
  if (quantize_) STATICLM_RETURN_IF_ERROR(map_.Release(0, shards_end_));
  return file->AdoptHeader(header_.Finish(), map_.data() + base, shards_end_ + tail_bytes_ - base);
}

}  // namespace

bool IsDirectory(const char* path) {
  struct stat st;
  return path != nullptr && ::stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

Status ParseQuantizeName(const char* name, DType* out, bool* quantize) {
  *quantize = name != nullptr && name[0] != '\0';
  *out = DType::kF32;
  if (!*quantize) return Status::Ok();
  if (!std::strcmp(name, "q8_0")) {
    *out = DType::kQ8_0;
  } else if (!std::strcmp(name, "q4_0")) {
    *out = DType::kQ4_0;
  } else if (!std::strcmp(name, "q4_k")) {
    *out = DType::kQ4_K;
  } else {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--quantize expects q8_0, q4_0 or q4_k, got '%.32s'", name);
  }
  return Status::Ok();
}

Status HfFolder::Open(const char* dir, const char* quantize, gguf::GgufFile* file) {
  DType quant = DType::kF32;
  bool quantizing = false;
  STATICLM_RETURN_IF_ERROR(ParseQuantizeName(quantize, &quant, &quantizing));
  FolderBuilder builder(dir, quant, quantizing, &map_);
  Status s = builder.Build(file, &fingerprint_, &shard_count_, &stored_bytes_);
  if (!s.ok()) map_.Close();
  return s;
}

Status OpenModelDescription(const char* path, const char* quantize, HfFolder* folder,
                            gguf::GgufFile* file) {
  if (IsDirectory(path)) return folder->Open(path, quantize, file);
  if (quantize != nullptr && quantize[0] != '\0') {
    return Status::Error(StatusCode::kInvalidArgument,
                         "--quantize applies to Hugging Face folders; %s is a file", path);
  }
  return file->Open(path);
}

}  // namespace staticlm::hf
