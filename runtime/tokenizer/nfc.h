// NfcNormalizer: Unicode Normalization Form C of a stretch of text, in scratch sized at
// init, as the NFC normalizer of a tokenizer.json (Qwen2) applies it before splitting.
//
// The standard algorithm over the generated tables (unicode_nfc_tables.h): full canonical
// decomposition (Hangul by rule), canonical ordering of each run of non-starters by
// combining class, then canonical composition of each unblocked character with the last
// starter. Text whose code points are all below the first decomposable or combining one
// (ASCII and most Latin-1) is NFC already and only copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "platform/status.h"

namespace staticlm::text {

class NfcNormalizer {
 public:
  // Init only: allocates for texts of up to `max_text_bytes` bytes.
  Status Init(size_t max_text_bytes);

  // Run-phase safe (no allocation). Returns the NFC form of `text` (valid UTF-8, at most
  // the init limit), held in the normalizer's buffer until the next call.
  std::string_view Normalize(std::string_view text);

  size_t bytes() const { return code_points_.capacity() * sizeof(uint32_t) + out_.capacity(); }

 private:
  size_t Decompose(std::string_view text);
  void Reorder(size_t n);
  size_t Compose(size_t n);

  std::vector<uint32_t> code_points_;
  std::vector<char> out_;
};

}  // namespace staticlm::text
