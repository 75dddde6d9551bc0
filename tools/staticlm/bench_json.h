// A small streaming JSON writer for the `staticlm bench --json` report: nested objects and
// arrays, commas and indentation handled here. Non-finite numbers are written as null.
#pragma once

#include <cstdint>
#include <cstdio>

namespace staticlm::cli {

class JsonOut {
 public:
  explicit JsonOut(FILE* out) : out_(out) {}

  // `key` names the value inside an object; pass nullptr inside an array or at the top.
  void BeginObject(const char* key = nullptr);
  void EndObject();
  void BeginArray(const char* key = nullptr);
  void EndArray();
  void Number(const char* key, double value);
  void Integer(const char* key, long long value);
  void Unsigned(const char* key, uint64_t value);
  void String(const char* key, const char* value);
  void Bool(const char* key, bool value);
  void Null(const char* key);

 private:
  static constexpr int kMaxDepth = 16;  // nesting limit (the report uses 4 levels)
  // Writes the comma, line break and key that precede a value. Object members go one per
  // line; array elements stay on one line unless they are containers themselves.
  void Prefix(const char* key, bool container = false);

  FILE* out_;
  int depth_ = 0;
  bool empty_[kMaxDepth] = {};          // no value written yet in this container
  bool is_array_[kMaxDepth] = {};       // array values stay on one line...
  bool had_container_[kMaxDepth] = {};  // ...unless they are objects or arrays
};

}  // namespace staticlm::cli
