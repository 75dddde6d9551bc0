#include "runtime/tokenizer/tokenizer_json_stages.h"

#include <string>

namespace staticlm::tokenizer_json {

using json_fields::Index;
using json_fields::Join;
using json_fields::Json;

namespace {

constexpr std::string_view kMeta = "\xE2\x96\x81";  // "▁"

// The split patterns staticlm implements by hand (pre_tokenizer.h), exactly as the models'
// tokenizer.json files spell them.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o's o200k (Phi-4-mini).
constexpr std::string_view kGpt4oPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Status TypeOf(const Json& node, const std::string& field, std::string* type) {
  if (!node.is_object()) return json_fields::NotA(kFile, field, "an object");
  const Json* t = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(node, "type", kFile, field, &t));
  if (!t->is_string()) return json_fields::NotA(kFile, Join(field, "type"), "a string");
  *type = t->get<std::string>();
  return Status::Ok();
}

// The members of a Sequence node (`key`: "normalizers", "pretokenizers", ...).
Status Members(const Json& node, const char* key, const std::string& field, const Json** out) {
  STATICLM_RETURN_IF_ERROR(json_fields::Require(node, key, kFile, field, out));
  if (!(*out)->is_array()) return json_fields::NotA(kFile, Join(field, key), "an array");
  return Status::Ok();
}

// A Replace stage's String pattern and content; a Regex pattern is not supported.
Status ReadReplace(const Json& node, const std::string& field, std::string* pattern,
                   std::string* content) {
  const Json* p = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(node, "pattern", kFile, field, &p));
  const Json* s = p->is_object() ? json_fields::Find(*p, "String") : nullptr;
  if (s == nullptr || !s->is_string()) {
    return json_fields::Unsupported(kFile, Join(field, "pattern"), *p, "a String pattern");
  }
  *pattern = s->get<std::string>();
  const Json* c = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(node, "content", kFile, field, &c));
  if (!c->is_string()) return json_fields::NotA(kFile, Join(field, "content"), "a string");
  *content = c->get<std::string>();
  return Status::Ok();
}

Status ReadOneNormalizer(const Json& node, const std::string& field, Stages* stages,
                         TokenizerSpec* spec) {
  std::string type;
  STATICLM_RETURN_IF_ERROR(TypeOf(node, field, &type));
  if (type == "Sequence") {
    const Json* list = nullptr;
    STATICLM_RETURN_IF_ERROR(Members(node, "normalizers", field, &list));
    for (size_t i = 0; i < list->size(); ++i) {
      STATICLM_RETURN_IF_ERROR(
          ReadOneNormalizer((*list)[i], Index(Join(field, "normalizers"), i), stages, spec));
    }
    return Status::Ok();
  }
  if (type == "NFC") {
    spec->nfc = true;
    return Status::Ok();
  }
  if (type == "Prepend") {
    std::string prepend;
    STATICLM_RETURN_IF_ERROR(json_fields::GetString(node, "prepend", kFile, field, &prepend));
    if (prepend != kMeta) {
      return json_fields::Unsupported(kFile, Join(field, "prepend"), prepend, "only \"▁\"");
    }
    stages->has_normalizer = true;
    spec->has_space_rules = true;
    spec->space_prefix = SpacePrefix::kAlways;
    spec->prefix_always_added = true;
    return Status::Ok();
  }
  if (type == "Replace") {
    std::string pattern;
    std::string content;
    STATICLM_RETURN_IF_ERROR(ReadReplace(node, field, &pattern, &content));
    if (pattern != " " || content != kMeta) {
      return json_fields::Unsupported(kFile, Join(field, "pattern"), pattern + " -> " + content,
                                      "only \" \" -> \"▁\"");
    }
    stages->spaces_to_metaspace = true;
    stages->has_normalizer = true;
    spec->has_space_rules = true;
    return Status::Ok();
  }
  return json_fields::Unsupported(kFile, Join(field, "type"), type,
                                  "NFC, Prepend, Replace or a Sequence of them");
}

// Split(pattern, Isolated) with one of the patterns above.
Status ReadSplit(const Json& node, const std::string& field, text::PreTokenizerKind* kind) {
  const Json* p = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(node, "pattern", kFile, field, &p));
  const Json* regex = p->is_object() ? json_fields::Find(*p, "Regex") : nullptr;
  if (regex == nullptr || !regex->is_string()) {
    return json_fields::Unsupported(kFile, Join(field, "pattern"), *p);
  }
  const std::string r = regex->get<std::string>();
  if (r == kLlama3Pattern) {
    *kind = text::PreTokenizerKind::kLlama3;
  } else if (r == kQwen2Pattern) {
    *kind = text::PreTokenizerKind::kQwen2;
  } else if (r == kGpt2Pattern) {
    *kind = text::PreTokenizerKind::kGpt2;
  } else if (r == kGpt4oPattern) {
    *kind = text::PreTokenizerKind::kGpt4o;
  } else {
    return json_fields::Unsupported(kFile, Join(field, "pattern.Regex"), r,
                                    "the GPT-2, Llama 3, Qwen2 and GPT-4o patterns");
  }
  std::string behavior;
  STATICLM_RETURN_IF_ERROR(json_fields::GetString(node, "behavior", kFile, field, &behavior));
  if (behavior != "Isolated") {
    return json_fields::Unsupported(kFile, Join(field, "behavior"), behavior, "Isolated");
  }
  bool invert = false;
  STATICLM_RETURN_IF_ERROR(json_fields::GetBool(node, "invert", kFile, field, &invert));
  if (invert) return json_fields::Unsupported(kFile, Join(field, "invert"), true);
  return Status::Ok();
}

// ByteLevel: add_prefix_space must be false; *use_regex gets use_regex (default true).
Status ReadByteLevel(const Json& node, const std::string& field, bool* use_regex) {
  bool prefix = false;
  STATICLM_RETURN_IF_ERROR(json_fields::GetBool(node, "add_prefix_space", kFile, field, &prefix));
  if (prefix) return json_fields::Unsupported(kFile, Join(field, "add_prefix_space"), true);
  *use_regex = true;
  return json_fields::GetBool(node, "use_regex", kFile, field, use_regex);
}

Status ReadMetaspace(const Json& node, const std::string& field, Stages* stages,
                     TokenizerSpec* spec) {
  std::string replacement;
  STATICLM_RETURN_IF_ERROR(json_fields::GetString(node, "replacement", kFile, field, &replacement));
  if (replacement != kMeta) {
    return json_fields::Unsupported(kFile, Join(field, "replacement"), replacement, "\"▁\"");
  }
  std::string scheme;
  bool has_scheme = false;
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetString(node, "prepend_scheme", kFile, field, &scheme, &has_scheme));
  if (!has_scheme) {  // files from before prepend_scheme: add_prefix_space means "always"
    bool add_prefix_space = true;
    STATICLM_RETURN_IF_ERROR(
        json_fields::GetBool(node, "add_prefix_space", kFile, field, &add_prefix_space));
    scheme = add_prefix_space ? "always" : "never";
  }
  if (scheme == "always") {
    spec->space_prefix = SpacePrefix::kAlways;
  } else if (scheme == "first") {
    spec->space_prefix = SpacePrefix::kFirst;
  } else if (scheme == "never") {
    spec->space_prefix = SpacePrefix::kNever;
  } else {
    return json_fields::Unsupported(kFile, Join(field, "prepend_scheme"), scheme);
  }
  spec->split_at_metaspace = true;
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetBool(node, "split", kFile, field, &spec->split_at_metaspace));
  spec->has_space_rules = true;
  spec->prefix_always_added = false;
  stages->spaces_to_metaspace = true;
  return Status::Ok();
}

// A Sequence of byte-level steps: Split or Digits, then ByteLevel.
Status ReadByteLevelSequence(const Json& list, const std::string& field, Stages* stages,
                             TokenizerSpec* spec) {
  const size_t n = list.size();
  std::string first_type;
  std::string last_type;
  if (n == 2) {
    STATICLM_RETURN_IF_ERROR(TypeOf(list[0], Index(field, 0), &first_type));
    STATICLM_RETURN_IF_ERROR(TypeOf(list[1], Index(field, 1), &last_type));
  }
  if (n != 2 || last_type != "ByteLevel" || (first_type != "Split" && first_type != "Digits")) {
    return json_fields::Unsupported(kFile, field, list, "Split or Digits, then ByteLevel");
  }
  bool use_regex = true;
  STATICLM_RETURN_IF_ERROR(ReadByteLevel(list[1], Index(field, 1), &use_regex));
  spec->has_pre_kind = true;
  stages->byte_level = true;
  if (first_type == "Split") {
    if (use_regex) {
      return json_fields::Unsupported(kFile, Join(Index(field, 1), "use_regex"), true,
                                      "after a Split");
    }
    return ReadSplit(list[0], Index(field, 0), &spec->pre_kind);
  }
  if (!use_regex) {
    return json_fields::Unsupported(kFile, Join(Index(field, 1), "use_regex"), false,
                                    "after Digits");
  }
  bool individual = false;
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetBool(list[0], "individual_digits", kFile, Index(field, 0), &individual));
  spec->pre_kind = individual ? text::PreTokenizerKind::kDigitsThenGpt2
                              : text::PreTokenizerKind::kDigitRunsThenGpt2;
  return Status::Ok();
}

}  // namespace

Status ReadNormalizer(const Json* node, Stages* stages, TokenizerSpec* spec) {
  if (node == nullptr || node->is_null()) return Status::Ok();
  return ReadOneNormalizer(*node, "normalizer", stages, spec);
}

Status ReadPreTokenizer(const Json* node, bool byte_fallback, Stages* stages, TokenizerSpec* spec) {
  const std::string field = "pre_tokenizer";
  if (node == nullptr || node->is_null()) return Status::Ok();
  std::string type;
  STATICLM_RETURN_IF_ERROR(TypeOf(*node, field, &type));
  if (!byte_fallback && type == "ByteLevel") {
    bool use_regex = true;
    STATICLM_RETURN_IF_ERROR(ReadByteLevel(*node, field, &use_regex));
    if (!use_regex) {
      return json_fields::Unsupported(kFile, Join(field, "use_regex"), false,
                                      "ByteLevel alone must split with the GPT-2 regex");
    }
    stages->byte_level = true;
    spec->has_pre_kind = true;
    spec->pre_kind = text::PreTokenizerKind::kGpt2;
    return Status::Ok();
  }
  if (!byte_fallback && type == "Sequence") {
    const Json* list = nullptr;
    STATICLM_RETURN_IF_ERROR(Members(*node, "pretokenizers", field, &list));
    return ReadByteLevelSequence(*list, Join(field, "pretokenizers"), stages, spec);
  }
  if (byte_fallback && type == "Metaspace") return ReadMetaspace(*node, field, stages, spec);
  return json_fields::Unsupported(kFile, Join(field, "type"), type,
                                  byte_fallback ? "a byte_fallback model takes Metaspace or none"
                                                : "ByteLevel, or Split/Digits then ByteLevel");
}

namespace {

Status ReadTemplate(const Json& node, const std::string& field, Stages* stages) {
  const Json* single = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(node, "single", kFile, field, &single));
  const std::string single_field = Join(field, "single");
  if (!single->is_array()) return json_fields::NotA(kFile, single_field, "an array");
  // [Sequence A] or [SpecialToken BOS, Sequence A]: nothing after the text.
  const size_t n = single->size();
  const Json* last = n > 0 ? json_fields::Find((*single)[n - 1], "Sequence") : nullptr;
  const Json* first = n == 2 ? json_fields::Find((*single)[0], "SpecialToken") : nullptr;
  if (last == nullptr || n > 2 || (n == 2 && first == nullptr)) {
    return json_fields::Unsupported(kFile, single_field, *single,
                                    "at most one special token, before the text");
  }
  if (first == nullptr) return Status::Ok();
  std::string name;
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetString(*first, "id", kFile, Join(single_field, "SpecialToken"), &name));
  const Json* specials = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(node, "special_tokens", kFile, field, &specials));
  const Json* entry = specials->is_object() ? json_fields::Find(*specials, name.c_str()) : nullptr;
  const Json* ids =
      entry != nullptr && entry->is_object() ? json_fields::Find(*entry, "ids") : nullptr;
  const std::string ids_field = Join(Join(Join(field, "special_tokens"), name), "ids");
  if (ids == nullptr || !ids->is_array() || ids->size() != 1 || !(*ids)[0].is_number_integer()) {
    return json_fields::NotA(kFile, ids_field, "a list of one token id");
  }
  const int64_t id = (*ids)[0].get<int64_t>();
  if (id < 0 || id > INT32_MAX) return json_fields::NotA(kFile, ids_field, "a token id");
  stages->bos_id = static_cast<int32_t>(id);
  return Status::Ok();
}

Status ReadOneProcessor(const Json& node, const std::string& field, Stages* stages) {
  std::string type;
  STATICLM_RETURN_IF_ERROR(TypeOf(node, field, &type));
  if (type == "ByteLevel") return Status::Ok();  // offsets only
  if (type == "TemplateProcessing") return ReadTemplate(node, field, stages);
  if (type == "Sequence") {
    const Json* list = nullptr;
    STATICLM_RETURN_IF_ERROR(Members(node, "processors", field, &list));
    for (size_t i = 0; i < list->size(); ++i) {
      STATICLM_RETURN_IF_ERROR(
          ReadOneProcessor((*list)[i], Index(Join(field, "processors"), i), stages));
    }
    return Status::Ok();
  }
  return json_fields::Unsupported(kFile, Join(field, "type"), type,
                                  "ByteLevel, TemplateProcessing or a Sequence of them");
}

// What a SentencePiece-style decoder Sequence has done so far.
struct SpmDecoderSteps {
  bool fused = false;          // Fuse: later steps see the whole text as one token
  bool byte_fallback = false;  // ByteFallback: <0xNN> tokens become bytes
  bool spaces = false;         // Replace("▁", " "): "▁" becomes a space
};

// One step of a SentencePiece-style decoder Sequence.
Status ReadSpmDecoderStep(const Json& node, const std::string& field, SpmDecoderSteps* steps,
                          TokenizerSpec* spec) {
  std::string type;
  STATICLM_RETURN_IF_ERROR(TypeOf(node, field, &type));
  if (type == "ByteFallback") {
    steps->byte_fallback = true;
    return Status::Ok();
  }
  if (type == "Fuse") {
    steps->fused = true;
    return Status::Ok();
  }
  if (type == "Replace") {
    std::string pattern;
    std::string content;
    STATICLM_RETURN_IF_ERROR(ReadReplace(node, field, &pattern, &content));
    if (pattern != kMeta || content != " ") {
      return json_fields::Unsupported(kFile, Join(field, "pattern"), pattern + " -> " + content,
                                      "only \"▁\" -> \" \"");
    }
    steps->spaces = true;
    return Status::Ok();
  }
  if (type == "Strip") {
    std::string content;
    int64_t start = 0;
    int64_t stop = 0;
    STATICLM_RETURN_IF_ERROR(json_fields::GetString(node, "content", kFile, field, &content));
    STATICLM_RETURN_IF_ERROR(json_fields::GetInt(node, "start", kFile, field, &start));
    STATICLM_RETURN_IF_ERROR(json_fields::GetInt(node, "stop", kFile, field, &stop));
    if (content != " " || stop != 0 || start < 0 || start > 16 || !steps->fused) {
      return json_fields::Unsupported(kFile, field, node, "Strip(\" \", n, 0) after Fuse");
    }
    spec->decode_strip_leading = static_cast<int32_t>(start);
    return Status::Ok();
  }
  return json_fields::Unsupported(kFile, Join(field, "type"), type,
                                  "Replace, ByteFallback, Fuse, Strip");
}

}  // namespace

Status ReadPostProcessor(const Json* node, Stages* stages) {
  if (node == nullptr || node->is_null()) return Status::Ok();
  return ReadOneProcessor(*node, "post_processor", stages);
}

Status ReadDecoder(const Json* node, bool byte_fallback, TokenizerSpec* spec) {
  const std::string field = "decoder";
  if (node == nullptr || node->is_null()) return json_fields::Missing(kFile, field);
  std::string type;
  STATICLM_RETURN_IF_ERROR(TypeOf(*node, field, &type));
  if (!byte_fallback) {
    if (type == "ByteLevel") return Status::Ok();
    return json_fields::Unsupported(kFile, Join(field, "type"), type, "ByteLevel");
  }
  // A byte-fallback model's <0xNN> tokens decode to bytes only through ByteFallback, which
  // staticlm always applies: a decoder without it would print them as text.
  if (type != "Sequence") {
    return json_fields::Unsupported(kFile, Join(field, "type"), type,
                                    "a Sequence with ByteFallback");
  }
  const Json* list = nullptr;
  STATICLM_RETURN_IF_ERROR(Members(*node, "decoders", field, &list));
  SpmDecoderSteps steps;
  for (size_t i = 0; i < list->size(); ++i) {
    STATICLM_RETURN_IF_ERROR(
        ReadSpmDecoderStep((*list)[i], Index(Join(field, "decoders"), i), &steps, spec));
  }
  if (!steps.byte_fallback || !steps.spaces) {
    return json_fields::Unsupported(kFile, Join(field, "decoders"), *list,
                                    "needs ByteFallback and Replace(\"▁\", \" \")");
  }
  return Status::Ok();
}

}  // namespace staticlm::tokenizer_json
