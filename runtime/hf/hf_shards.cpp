#include "runtime/hf/hf_shards.h"

#include <sys/stat.h>

#include <set>

#include "runtime/hf/json_fields.h"

namespace staticlm::hf {
namespace {

bool IsRegularFile(const std::string& path, uint64_t* bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *bytes = static_cast<uint64_t>(st.st_size);
  return true;
}

// A shard name from the index must be a plain file name inside the folder.
bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

Status ReadIndex(const char* dir, const std::string& path, std::vector<Shard>* shards) {
  FileMap map;
  std::string_view text;
  STATICLM_RETURN_IF_ERROR(ReadText(path, &map, &text));
  Json index;
  STATICLM_RETURN_IF_ERROR(ParseJson(text, path.c_str(), &index));
  JsonFields fields(index, path.c_str());
  const Json* weight_map = nullptr;
  STATICLM_RETURN_IF_ERROR(fields.OptionalObject("weight_map", &weight_map));
  if (weight_map == nullptr) return fields.Fail("weight_map", "is missing");
  std::set<std::string> names;
  for (auto it = weight_map->begin(); it != weight_map->end(); ++it) {
    if (!it.value().is_string() || !IsPlainFileName(it.value().get<std::string>())) {
      return Status::Error(StatusCode::kFormatError,
                           "%s: key 'weight_map.%.80s' is not a file name in the folder",
                           path.c_str(), it.key().c_str());
    }
    names.insert(it.value().get<std::string>());
  }
  if (names.empty()) return fields.Fail("weight_map", "lists no tensors");
  for (const std::string& n : names) {
    Shard s;
    s.name = n;
    s.path = JoinPath(dir, n);
    for (auto it = weight_map->begin(); it != weight_map->end(); ++it) {
      if (it.value().get<std::string>() == n) s.listed.push_back(it.key());
    }
    shards->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace

std::string JoinPath(const char* dir, const std::string& name) {
  std::string p = dir;
  if (!p.empty() && p.back() != '/') p += '/';
  return p + name;
}

Status ReadText(const std::string& path, FileMap* map, std::string_view* text) {
  STATICLM_RETURN_IF_ERROR(map->Open(path.c_str()));
  *text = std::string_view(reinterpret_cast<const char*>(map->data()), map->size());
  return Status::Ok();
}

Status CheckListedTensors(const Shard& shard) {
  std::set<std::string_view> present;
  for (const SafetensorsEntry& e : shard.header.tensors) present.insert(e.name);
  for (const std::string& name : shard.listed) {
    if (present.count(name) == 0) {
      return Status::Error(StatusCode::kFormatError,
                           "%s: no tensor '%.80s', which model.safetensors.index.json puts here",
                           shard.path.c_str(), name.c_str());
    }
  }
  return Status::Ok();
}

Status FindShards(const char* dir, std::vector<Shard>* shards) {
  uint64_t bytes = 0;
  const std::string index = JoinPath(dir, "model.safetensors.index.json");
  const std::string single = JoinPath(dir, "model.safetensors");
  if (IsRegularFile(index, &bytes)) {
    STATICLM_RETURN_IF_ERROR(ReadIndex(dir, index, shards));
  } else if (IsRegularFile(single, &bytes)) {
    Shard s;
    s.name = "model.safetensors";
    s.path = single;
    shards->push_back(std::move(s));
  } else {
    return Status::Error(StatusCode::kIoError,
                         "%s: no model.safetensors or model.safetensors.index.json", dir);
  }
  for (Shard& s : *shards) {
    if (!IsRegularFile(s.path, &s.bytes)) {
      return Status::Error(StatusCode::kIoError, "%s: shard missing (named in the index)",
                           s.path.c_str());
    }
  }
  return Status::Ok();
}

}  // namespace staticlm::hf
