#include "runtime/tokenizer/tokenizer_from_gguf.h"

#include <cstdio>

#include "runtime/gguf/gguf_file.h"
#include "runtime/tokenizer/token_type.h"

namespace staticlm {

namespace {

// Reads an optional token id: absent keys leave -1.
Status ReadOptionalId(const gguf::GgufFile& file, std::string_view key, int32_t* id) {
  *id = -1;
  if (file.FindKey(key) == nullptr) return Status::Ok();
  return file.GetI32(key, id);
}

// Phi-3's files mark their chat tokens (<|user|>, <|end|>, …) and </s> rstrip in
// tokenizer.json, which GGUF does not carry: like llama.cpp, every special token of a phi3
// file but <unk>, <s> and <|endoftext|> swallows the whitespace after it.
void SetPhi3StripFlags(TokenizerSpec* spec) {
  if (spec->architecture != "phi3" || !spec->token_flags.empty() ||
      spec->token_types.size() != spec->tokens.size()) {
    return;
  }
  spec->token_flags.assign(spec->tokens.size(), 0);
  for (size_t i = 0; i < spec->tokens.size(); ++i) {
    const auto type = static_cast<TokenType>(spec->token_types[i]);
    const std::string_view t = spec->tokens[i];
    const bool special = type == TokenType::kControl || type == TokenType::kUserDefined ||
                         type == TokenType::kUnknown;
    const bool kept = t == "<unk>" || t == "<s>" || t == "<|endoftext|>";
    if ((special || t == "</s>") && !kept) spec->token_flags[i] = kTokenRstrip;
  }
}

}  // namespace

Status ReadTokenizerSpec(const gguf::GgufFile& file, TokenizerSpec* spec) {
  *spec = TokenizerSpec();
  STATICLM_RETURN_IF_ERROR(file.GetString("tokenizer.ggml.model", &spec->model));
  if (file.FindKey("general.architecture") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetString("general.architecture", &spec->architecture));
  }
  if (file.FindKey("tokenizer.ggml.pre") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetString("tokenizer.ggml.pre", &spec->pre));
  }
  STATICLM_RETURN_IF_ERROR(file.GetStringArray("tokenizer.ggml.tokens", &spec->tokens));
  if (file.FindKey("tokenizer.ggml.merges") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetStringArray("tokenizer.ggml.merges", &spec->merges));
  }
  if (file.FindKey("tokenizer.ggml.scores") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetF32Array("tokenizer.ggml.scores", &spec->scores));
  }
  if (file.FindKey("tokenizer.ggml.token_type") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetI32Array("tokenizer.ggml.token_type", &spec->token_types));
  }
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.bos_token_id", &spec->bos_id));
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.eos_token_id", &spec->eos_id));
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.eot_token_id", &spec->eot_id));
  STATICLM_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.unknown_token_id", &spec->unk_id));
  if (file.FindKey("tokenizer.ggml.add_space_prefix") != nullptr) {
    STATICLM_RETURN_IF_ERROR(
        file.GetBool("tokenizer.ggml.add_space_prefix", &spec->add_space_prefix));
  }
  if (file.FindKey("tokenizer.ggml.add_bos_token") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetBool("tokenizer.ggml.add_bos_token", &spec->add_bos));
  }
  // Qwen2's tokenizer.json (Qwen2, Qwen2.5, Qwen3) NFC-normalizes before splitting; the GGUF
  // keeps only the pre-tokenizer's name.
  spec->nfc = spec->pre == "qwen2";
  SetPhi3StripFlags(spec);
  return Status::Ok();
}

Status InitTokenizerFromGguf(const gguf::GgufFile& file, size_t max_text_bytes,
                             Tokenizer* tokenizer) {
  TokenizerSpec spec;
  STATICLM_RETURN_IF_ERROR(ReadTokenizerSpec(file, &spec));
  return tokenizer->Init(spec, max_text_bytes);
}

namespace {

// Leaves `chat` without a format, saying why and how to choose one.
void DisableChat(std::string_view architecture, bool has_template, ChatTemplate* chat) {
  char reason[240];  // a Status message's size
  const ChatFormat* family = ChatFormatOfFamily(architecture);
  if (has_template) {
    std::snprintf(reason, sizeof(reason),
                  "the model's chat template (tokenizer.chat_template) is not one "
                  "staticlm recognises (%s): choose a format with --chat-template NAME "
                  "(staticlm_set_chat_format)",
                  ChatFormatNames());
  } else if (family != nullptr) {
    std::snprintf(reason, sizeof(reason),
                  "the model has no chat template (tokenizer.chat_template); its family (%.*s) "
                  "uses \"%s\": choose it with --chat-template %s "
                  "(staticlm_set_chat_format)",
                  static_cast<int>(architecture.size() > 32 ? 32 : architecture.size()),
                  architecture.data(), family->name, family->name);
  } else {
    std::snprintf(reason, sizeof(reason),
                  "the model has no chat template (tokenizer.chat_template): choose a format "
                  "with --chat-template NAME (%s; staticlm_set_chat_format)",
                  ChatFormatNames());
  }
  chat->Disable(reason);
}

}  // namespace

Status InitChatTemplateFromGguf(const gguf::GgufFile& file, std::string_view bos_text,
                                ChatTemplate* chat) {
  std::string_view architecture;
  if (file.FindKey("general.architecture") != nullptr) {
    STATICLM_RETURN_IF_ERROR(file.GetString("general.architecture", &architecture));
  }
  if (file.FindKey("tokenizer.chat_template") == nullptr) {
    DisableChat(architecture, false, chat);
    return Status::Ok();
  }
  std::string_view text;
  STATICLM_RETURN_IF_ERROR(file.GetString("tokenizer.chat_template", &text));
  InitChatTemplateFromText(architecture, text, bos_text, chat);
  return Status::Ok();
}

void InitChatTemplateFromText(std::string_view architecture, std::string_view text,
                              std::string_view bos_text, ChatTemplate* chat) {
  if (text.empty()) {
    DisableChat(architecture, false, chat);
  } else if (!chat->Init(text, bos_text).ok()) {
    DisableChat(architecture, true, chat);
  }
}

}  // namespace staticlm
