// The files of a Hugging Face folder: config.json's text, and the safetensors shards — the one
// model.safetensors, or those model.safetensors.index.json names (plain file names inside the
// folder only). Init only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/file_map.h"
#include "platform/status.h"
#include "runtime/hf/safetensors_header.h"

namespace staticlm::hf {

struct Shard {
  std::string name;  // as in the index, e.g. "model-00001-of-00002.safetensors"
  std::string path;
  uint64_t bytes = 0;
  uint64_t offset = 0;  // in the folder's stitched map
  SafetensorsHeader header;
  std::vector<std::string> listed;  // the tensors the index puts in this shard
};

// "dir/name".
std::string JoinPath(const char* dir, const std::string& name);

// Maps `path` into `map` and views its bytes as text.
Status ReadText(const std::string& path, FileMap* map, std::string_view* text);

// The folder's shards with their sizes (headers not yet read). kIoError for a folder without
// weights or a shard the index names that is not there; kFormatError for a malformed index.
Status FindShards(const char* dir, std::vector<Shard>* shards);

// After its header is read: every tensor the index lists for `shard` is in it.
Status CheckListedTensors(const Shard& shard);

}  // namespace staticlm::hf
