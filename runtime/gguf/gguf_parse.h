// Internal stages of GgufFile::Parse, one per section of the file. Each validates its
// section completely before the next one trusts it. Init only: they fill vectors.
#pragma once

#include <string_view>
#include <vector>

#include "platform/status.h"
#include "runtime/gguf/byte_reader.h"
#include "runtime/gguf/gguf_file.h"

namespace staticlm::gguf {

// A name from an untrusted file made safe to print: at most 60 bytes, non-printable bytes
// replaced by '?', "..." appended when cut.
struct PrintableName {
  char text[64];
};
PrintableName Printable(std::string_view name);

// What an error is about, e.g. "key 'general.name'", "tensor 'token_embd.weight'", "key #3".
struct Subject {
  char text[96];
};
Subject Named(const char* kind, std::string_view name);
Subject Numbered(const char* kind, uint64_t index);

// kFormatError "<subject> at byte <at>: <detail>".
Status Fail(const Subject& subject, uint64_t at, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// Reads magic, version and counts; rejects version 1, unknown versions and other formats.
Status ParseHeader(ByteReader& r, uint32_t* version, uint64_t* tensor_count, uint64_t* kv_count);

// Reads and validates `count` key/values (every string, array and bool inside them).
Status ParseKeyValues(ByteReader& r, uint64_t count, std::vector<KeyValue>* out);

// Reads `count` tensor infos: names, dims, types and offsets (not yet checked against the
// data section, whose start depends on where the infos end).
Status ParseTensorInfos(ByteReader& r, uint64_t count, std::vector<TensorInfo>* out);

// Checks each tensor's offset and size against the data section [data, data + data_bytes)
// and sets TensorInfo::data; rejects misaligned and overlapping tensors.
Status PlaceTensors(const uint8_t* data, uint64_t data_bytes, uint32_t alignment,
                    std::vector<TensorInfo>* tensors);

// Sorts `order` (indices into `names`) by name and rejects duplicates; `what` is "key" or
// "tensor" for the message.
Status SortUniqueNames(const std::vector<std::string_view>& names, const char* what,
                       std::vector<uint32_t>* order);

}  // namespace staticlm::gguf
