#include "tools/staticlm/bench_json.h"

#include <cmath>
#include <cstring>

#include "tools/staticlm/json_writer.h"

namespace staticlm::cli {

void JsonOut::Prefix(const char* key, bool container) {
  if (depth_ > 0 && depth_ <= kMaxDepth) {
    bool in_array = is_array_[depth_ - 1];
    if (in_array && container) had_container_[depth_ - 1] = true;
    if (!empty_[depth_ - 1]) std::fputs(in_array && !container ? ", " : ",", out_);
    if (!in_array || container) std::fprintf(out_, "\n%*s", 2 * depth_, "");
    empty_[depth_ - 1] = false;
  }
  if (key != nullptr) {
    WriteJsonString(out_, key, std::strlen(key));
    std::fputs(": ", out_);
  }
}

void JsonOut::BeginObject(const char* key) {
  Prefix(key, true);
  std::fputc('{', out_);
  if (depth_ < kMaxDepth) {
    empty_[depth_] = true;
    is_array_[depth_] = false;
  }
  ++depth_;
}

void JsonOut::EndObject() {
  --depth_;
  if (depth_ < kMaxDepth && !empty_[depth_]) std::fprintf(out_, "\n%*s", 2 * depth_, "");
  std::fputc('}', out_);
  if (depth_ == 0) std::fputc('\n', out_);
}

void JsonOut::BeginArray(const char* key) {
  Prefix(key, true);
  std::fputc('[', out_);
  if (depth_ < kMaxDepth) {
    empty_[depth_] = true;
    is_array_[depth_] = true;
    had_container_[depth_] = false;
  }
  ++depth_;
}

void JsonOut::EndArray() {
  --depth_;
  if (depth_ < kMaxDepth && !empty_[depth_] && had_container_[depth_]) {
    std::fprintf(out_, "\n%*s", 2 * depth_, "");
  }
  std::fputc(']', out_);
}

void JsonOut::Number(const char* key, double value) {
  Prefix(key);
  if (std::isfinite(value)) {
    std::fprintf(out_, "%.6f", value);
  } else {
    std::fputs("null", out_);
  }
}

void JsonOut::Integer(const char* key, long long value) {
  Prefix(key);
  std::fprintf(out_, "%lld", value);
}

void JsonOut::Unsigned(const char* key, uint64_t value) {
  Prefix(key);
  std::fprintf(out_, "%llu", static_cast<unsigned long long>(value));
}

void JsonOut::String(const char* key, const char* value) {
  Prefix(key);
  WriteJsonString(out_, value, std::strlen(value));
}

void JsonOut::Bool(const char* key, bool value) {
  Prefix(key);
  std::fputs(value ? "true" : "false", out_);
}

void JsonOut::Null(const char* key) {
  Prefix(key);
  std::fputs("null", out_);
}

}  // namespace staticlm::cli
