// Reads a GGUF file's header and metadata without its tensors, so tests of metadata
// consumers (the tokenizer) can use a model whose tensor types staticlm does not load yet.
// Test-only: allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "platform/status.h"
#include "runtime/gguf/gguf_file.h"

namespace staticlm::test {

// Copies `path`'s header and key-value section into *bytes with the tensor count set to 0,
// and parses that into *file, which borrows *bytes (keep both alive together).
// kIoError when the file cannot be read; kFormatError when its metadata is malformed.
Status OpenMetadataOnly(const char* path, std::vector<uint8_t>* bytes, gguf::GgufFile* file);

}  // namespace staticlm::test
