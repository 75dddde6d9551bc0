// The pipeline stages of a tokenizer.json around its model (normalizer, pre-tokenizer,
// post-processor, decoder), checked and turned into TokenizerSpec fields. Internal to
// tokenizer_json.cpp; see tokenizer_json.h for what is supported.
#pragma once

#include "runtime/tokenizer/json_fields.h"
#include "runtime/tokenizer/tokenizer.h"

namespace staticlm::tokenizer_json {

inline constexpr const char kFile[] = "tokenizer.json";

// What the stages say, before it is put into the spec.
struct Stages {
  bool byte_level = false;           // a ByteLevel pre-tokenizer was found
  bool spaces_to_metaspace = false;  // Replace(" ", "▁") or Metaspace
  bool has_normalizer = false;       // one that changes more than NFC does
  int32_t bos_id = -1;               // TemplateProcessing's leading special token
};

// `byte_fallback`: the model is SentencePiece-style (decides which stages fit).
Status ReadNormalizer(const json_fields::Json* node, Stages* stages, TokenizerSpec* spec);
Status ReadPreTokenizer(const json_fields::Json* node, bool byte_fallback, Stages* stages,
                        TokenizerSpec* spec);
Status ReadPostProcessor(const json_fields::Json* node, Stages* stages);
Status ReadDecoder(const json_fields::Json* node, bool byte_fallback, TokenizerSpec* spec);

}  // namespace staticlm::tokenizer_json
