// tokenizer.json → TokenizerSpec: the model (vocabulary, merges, flags), the added tokens
// and tokenizer_config.json; the stages around the model are in tokenizer_json_stages.cpp.
#include "runtime/tokenizer/tokenizer_json.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/tokenizer/json_fields.h"
#include "runtime/tokenizer/tokenizer_json_stages.h"

namespace staticlm {

namespace {

using json_fields::Index;
using json_fields::Join;
using json_fields::Json;
using tokenizer_json::kFile;
using tokenizer_json::Stages;

constexpr const char kConfigFile[] = "tokenizer_config.json";
constexpr int64_t kMaxVocab = int64_t{1} << 24;

// Token texts by id, built from model.vocab and added_tokens.
struct Vocabulary {
  std::vector<std::string> texts;
  std::vector<uint8_t> present;
  std::vector<TokenType> types;
  std::vector<uint8_t> flags;
  // Ids must cover 0 .. n-1 for the n entries of model.vocab and added_tokens, so an id
  // beyond that is an error at once (rather than a huge table with a gap).
  int64_t entries = 0;

  Status Put(int64_t id, const std::string& text, std::string_view field) {
    if (id < 0 || id >= kMaxVocab || id >= entries) {
      return Status::Error(StatusCode::kFormatError,
                           "%s: %.*s %lld is not a token id below %lld (the number of tokens)",
                           kFile, static_cast<int>(std::min<size_t>(field.size(), 80)),
                           field.data(), static_cast<long long>(id),
                           static_cast<long long>(std::min(entries, kMaxVocab)));
    }
    const auto i = static_cast<size_t>(id);
    if (i >= texts.size()) {
      texts.resize(i + 1);
      present.resize(i + 1, 0);
      types.resize(i + 1, TokenType::kNormal);
      flags.resize(i + 1, 0);
    }
    if (present[i] && texts[i] != text) {
      return Status::Error(StatusCode::kFormatError,
                           "%s: token id %lld is both '%.40s' and '%.40s'", kFile,
                           static_cast<long long>(id), texts[i].c_str(), text.c_str());
    }
    texts[i] = text;
    present[i] = 1;
    return Status::Ok();
  }
};

Status ReadVocab(const Json& model, Vocabulary* vocab) {
  const Json* v = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(model, "vocab", kFile, "model", &v));
  if (!v->is_object() || v->empty()) {
    return json_fields::NotA(kFile, "model.vocab", "a non-empty object of token ids");
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_number_integer()) {
      return json_fields::NotA(kFile, "model.vocab['" + it.key().substr(0, 40) + "']",
                               "a token id");
    }
    STATICLM_RETURN_IF_ERROR(vocab->Put(it.value().get<int64_t>(), it.key(), "model.vocab"));
  }
  return Status::Ok();
}

// merges: "left right" strings (older files) or [left, right] pairs (newer).
Status ReadMerges(const Json& model, std::vector<std::string>* merges) {
  const Json* m = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(model, "merges", kFile, "model", &m));
  if (!m->is_array()) return json_fields::NotA(kFile, "model.merges", "an array");
  merges->reserve(m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& e = (*m)[i];
    if (e.is_string()) {
      merges->push_back(e.get<std::string>());
      continue;
    }
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_string()) {
      return json_fields::NotA(kFile, Index("model.merges", i), "\"a b\" or [\"a\", \"b\"]");
    }
    const std::string left = e[0].get<std::string>();
    const std::string right = e[1].get<std::string>();
    if (left.find(' ') != std::string::npos || right.find(' ') != std::string::npos) {
      return json_fields::Unsupported(kFile, Index("model.merges", i), e,
                                      "tokens with a space in a merge");
    }
    merges->push_back(left + " " + right);
  }
  return Status::Ok();
}

// The model's flags. Sets *byte_fallback and the spec's BPE options; *unk gets unk_token.
Status ReadModelFlags(const Json& model, bool* byte_fallback, std::string* unk,
                      TokenizerSpec* spec) {
  std::string type;
  STATICLM_RETURN_IF_ERROR(json_fields::GetString(model, "type", kFile, "model", &type));
  if (type != "BPE") return json_fields::Unsupported(kFile, "model.type", type, "BPE");
  const Json* dropout = json_fields::Find(model, "dropout");
  if (dropout != nullptr && !dropout->is_null()) {
    return json_fields::Unsupported(kFile, "model.dropout", *dropout, "null");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    std::string affix;
    STATICLM_RETURN_IF_ERROR(json_fields::GetString(model, key, kFile, "model", &affix));
    if (!affix.empty()) return json_fields::Unsupported(kFile, Join("model", key), affix);
  }
  *byte_fallback = false;
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetBool(model, "byte_fallback", kFile, "model", byte_fallback));
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetBool(model, "fuse_unk", kFile, "model", &spec->fuse_unk));
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetBool(model, "ignore_merges", kFile, "model", &spec->ignore_merges));
  return json_fields::GetString(model, "unk_token", kFile, "model", unk);
}

Status ReadAddedToken(const Json& t, const std::string& field, bool has_normalizer,
                      Vocabulary* vocab) {
  if (!t.is_object()) return json_fields::NotA(kFile, field, "an object");
  std::string content;
  bool has_content = false;
  int64_t id = -1;
  bool has_id = false;
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetString(t, "content", kFile, field, &content, &has_content));
  STATICLM_RETURN_IF_ERROR(json_fields::GetInt(t, "id", kFile, field, &id, &has_id));
  if (!has_content || content.empty()) return json_fields::Missing(kFile, Join(field, "content"));
  if (!has_id) return json_fields::Missing(kFile, Join(field, "id"));
  bool special = false, lstrip = false, rstrip = false, normalized = false, single_word = false;
  STATICLM_RETURN_IF_ERROR(json_fields::GetBool(t, "special", kFile, field, &special));
  STATICLM_RETURN_IF_ERROR(json_fields::GetBool(t, "lstrip", kFile, field, &lstrip));
  STATICLM_RETURN_IF_ERROR(json_fields::GetBool(t, "rstrip", kFile, field, &rstrip));
  STATICLM_RETURN_IF_ERROR(json_fields::GetBool(t, "normalized", kFile, field, &normalized));
  STATICLM_RETURN_IF_ERROR(json_fields::GetBool(t, "single_word", kFile, field, &single_word));
  if (single_word) return json_fields::Unsupported(kFile, Join(field, "single_word"), true);
  // A normalized token is matched in the normalized text; staticlm matches the raw text,
  // which is the same without a normalizer, and with NFC alone unless a combining mark
  // right after the token would compose with its last character.
  if (normalized && has_normalizer) {
    return json_fields::Unsupported(kFile, Join(field, "normalized"), true, "with a normalizer");
  }
  STATICLM_RETURN_IF_ERROR(vocab->Put(id, content, Join(field, "id")));
  const auto i = static_cast<size_t>(id);
  vocab->types[i] = special ? TokenType::kControl : TokenType::kUserDefined;
  vocab->flags[i] = static_cast<uint8_t>((lstrip ? kTokenLstrip : 0) | (rstrip ? kTokenRstrip : 0));
  return Status::Ok();
}

Status ReadAddedTokens(const Json& root, bool has_normalizer, Vocabulary* vocab) {
  const Json* list = json_fields::Find(root, "added_tokens");
  if (list == nullptr || list->is_null()) return Status::Ok();
  if (!list->is_array()) return json_fields::NotA(kFile, "added_tokens", "an array");
  for (size_t i = 0; i < list->size(); ++i) {
    STATICLM_RETURN_IF_ERROR(
        ReadAddedToken((*list)[i], Index("added_tokens", i), has_normalizer, vocab));
  }
  return Status::Ok();
}

bool IsByteToken(const std::string& t) {
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// Token types of the model's own tokens, and every id covered.
Status FinishVocabulary(bool byte_fallback, const std::string& unk, Vocabulary* vocab,
                        int32_t* unk_id) {
  *unk_id = -1;
  for (size_t i = 0; i < vocab->texts.size(); ++i) {
    if (!vocab->present[i]) {
      return Status::Error(StatusCode::kFormatError,
                           "%s: no token has id %zu (model.vocab and "
                           "added_tokens leave a gap)",
                           kFile, i);
    }
    const bool model_token = vocab->types[i] == TokenType::kNormal;
    if (!unk.empty() && vocab->texts[i] == unk && *unk_id < 0) *unk_id = static_cast<int32_t>(i);
    if (!model_token) continue;
    if (byte_fallback && IsByteToken(vocab->texts[i])) vocab->types[i] = TokenType::kByte;
    if (!unk.empty() && vocab->texts[i] == unk) vocab->types[i] = TokenType::kUnknown;
  }
  if (!unk.empty() && *unk_id < 0) {
    return json_fields::Unsupported(kFile, "model.unk_token", unk, "not in the vocabulary");
  }
  return Status::Ok();
}

// A bos_token / eos_token entry of tokenizer_config.json: a string, {"content": ...} or null.
Status ReadConfigToken(const Json& config, const char* key, const Vocabulary& vocab, int32_t* id) {
  const Json* v = json_fields::Find(config, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  std::string text;
  if (v->is_string()) {
    text = v->get<std::string>();
  } else if (v->is_object()) {
    STATICLM_RETURN_IF_ERROR(json_fields::GetString(*v, "content", kConfigFile, key, &text));
  } else {
    return json_fields::NotA(kConfigFile, key, "a string or {\"content\": ...}");
  }
  for (size_t i = 0; i < vocab.texts.size(); ++i) {
    if (vocab.texts[i] == text) {
      *id = static_cast<int32_t>(i);
      return Status::Ok();
    }
  }
  return json_fields::Unsupported(kConfigFile, key, text, "not a token of tokenizer.json");
}

Status ReadConfig(std::string_view config_json, const Vocabulary& vocab, TokenizerJson* out) {
  if (config_json.empty()) return Status::Ok();
  const Json config = Json::parse(config_json.begin(), config_json.end(), nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    return Status::Error(StatusCode::kFormatError, "%s: not a JSON object", kConfigFile);
  }
  TokenizerSpec& spec = out->spec;
  STATICLM_RETURN_IF_ERROR(ReadConfigToken(config, "bos_token", vocab, &spec.bos_id));
  STATICLM_RETURN_IF_ERROR(ReadConfigToken(config, "eos_token", vocab, &spec.eos_id));
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetBool(config, "add_bos_token", kConfigFile, "", &spec.add_bos));
  bool add_eos = false;
  STATICLM_RETURN_IF_ERROR(
      json_fields::GetBool(config, "add_eos_token", kConfigFile, "", &add_eos));
  if (add_eos) return json_fields::Unsupported(kConfigFile, "add_eos_token", true);
  return json_fields::GetString(config, "chat_template", kConfigFile, "", &out->chat_template);
}

// Points the spec's views at the storage, once it no longer moves.
void FillViews(Vocabulary&& vocab, TokenizerJson* out) {
  out->token_texts = std::move(vocab.texts);
  TokenizerSpec& spec = out->spec;
  spec.tokens.assign(out->token_texts.begin(), out->token_texts.end());
  spec.merges.assign(out->merge_texts.begin(), out->merge_texts.end());
  spec.token_types.resize(vocab.types.size());
  for (size_t i = 0; i < vocab.types.size(); ++i) {
    spec.token_types[i] = static_cast<int32_t>(vocab.types[i]);
  }
  spec.token_flags = std::move(vocab.flags);
}

}  // namespace

Status ReadTokenizerJson(std::string_view tokenizer_json, std::string_view config_json,
                         TokenizerJson* out) {
  *out = TokenizerJson();
  const Json root = Json::parse(tokenizer_json.begin(), tokenizer_json.end(), nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return Status::Error(StatusCode::kFormatError, "%s: not a JSON object", kFile);
  }
  for (const char* key : {"truncation", "padding"}) {
    const Json* v = json_fields::Find(root, key);
    if (v != nullptr && !v->is_null()) return json_fields::Unsupported(kFile, key, *v, "null");
  }
  const Json* model = nullptr;
  STATICLM_RETURN_IF_ERROR(json_fields::Require(root, "model", kFile, "", &model));
  if (!model->is_object()) return json_fields::NotA(kFile, "model", "an object");
  TokenizerSpec& spec = out->spec;
  spec.space_prefix = SpacePrefix::kNever;  // until a Prepend or Metaspace says otherwise
  bool byte_fallback = false;
  std::string unk;
  STATICLM_RETURN_IF_ERROR(ReadModelFlags(*model, &byte_fallback, &unk, &spec));
  spec.model = byte_fallback ? "llama" : "gpt2";

  Stages stages;
  STATICLM_RETURN_IF_ERROR(
      tokenizer_json::ReadNormalizer(json_fields::Find(root, "normalizer"), &stages, &spec));
  STATICLM_RETURN_IF_ERROR(tokenizer_json::ReadPreTokenizer(
      json_fields::Find(root, "pre_tokenizer"), byte_fallback, &stages, &spec));
  STATICLM_RETURN_IF_ERROR(
      tokenizer_json::ReadPostProcessor(json_fields::Find(root, "post_processor"), &stages));
  STATICLM_RETURN_IF_ERROR(
      tokenizer_json::ReadDecoder(json_fields::Find(root, "decoder"), byte_fallback, &spec));
  if (!byte_fallback && (!stages.byte_level || stages.has_normalizer)) {
    return json_fields::Unsupported(kFile, "model.byte_fallback", false,
                                    "byte-level BPE needs a ByteLevel pre_tokenizer and no "
                                    "normalizer but NFC");
  }
  if (byte_fallback && !stages.spaces_to_metaspace) {
    return json_fields::Unsupported(kFile, "model.byte_fallback", true,
                                    "needs a Replace(\" \", \"▁\") normalizer or a Metaspace "
                                    "pre_tokenizer");
  }

  Vocabulary vocab;
  const Json* vocab_json = json_fields::Find(*model, "vocab");
  const Json* added_json = json_fields::Find(root, "added_tokens");
  vocab.entries = static_cast<int64_t>((vocab_json != nullptr ? vocab_json->size() : 0) +
                                       (added_json != nullptr ? added_json->size() : 0));
  STATICLM_RETURN_IF_ERROR(ReadVocab(*model, &vocab));
  STATICLM_RETURN_IF_ERROR(ReadAddedTokens(root, stages.has_normalizer, &vocab));
  STATICLM_RETURN_IF_ERROR(FinishVocabulary(byte_fallback, unk, &vocab, &spec.unk_id));
  STATICLM_RETURN_IF_ERROR(ReadMerges(*model, &out->merge_texts));
  if (byte_fallback && out->merge_texts.empty()) {
    return json_fields::Unsupported(kFile, "model.merges", Json::array(), "an empty list");
  }
  if (stages.bos_id >= static_cast<int64_t>(vocab.texts.size())) {
    return json_fields::NotA(kFile, "post_processor.special_tokens", "a token of the vocabulary");
  }
  spec.bos_id = stages.bos_id;
  spec.add_bos = stages.bos_id >= 0;
  STATICLM_RETURN_IF_ERROR(ReadConfig(config_json, vocab, out));
  FillViews(std::move(vocab), out);
  return Status::Ok();
}

Status InitTokenizerFromJson(std::string_view tokenizer_json, std::string_view config_json,
                             size_t max_text_bytes, Tokenizer* tokenizer,
                             std::string* chat_template) {
  TokenizerJson parsed;
  STATICLM_RETURN_IF_ERROR(ReadTokenizerJson(tokenizer_json, config_json, &parsed));
  STATICLM_RETURN_IF_ERROR(tokenizer->Init(parsed.spec, max_text_bytes));
  if (chat_template != nullptr) *chat_template = std::move(parsed.chat_template);
  return Status::Ok();
}

namespace {

Status ReadWholeFile(const char* path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(StatusCode::kIoError, "cannot open %s", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::Error(StatusCode::kIoError, "cannot read %s", path);
  *out = text.str();
  return Status::Ok();
}

}  // namespace

Status InitTokenizerFromJsonFiles(const char* tokenizer_json_path, const char* config_path,
                                  size_t max_text_bytes, Tokenizer* tokenizer,
                                  std::string* chat_template) {
  std::string tokenizer_json;
  std::string config_json;
  STATICLM_RETURN_IF_ERROR(ReadWholeFile(tokenizer_json_path, &tokenizer_json));
  if (config_path != nullptr) STATICLM_RETURN_IF_ERROR(ReadWholeFile(config_path, &config_json));
  return InitTokenizerFromJson(tokenizer_json, config_json, max_text_bytes, tokenizer,
                               chat_template);
}

}  // namespace staticlm
