// Engine: choosing the chat format (see runtime/tokenizer/chat_formats.h). Init only.
#include "runtime/engine/engine.h"
#include "runtime/tokenizer/tokenizer_from_gguf.h"

namespace staticlm {

std::string_view Engine::ChatBosText() const {
  // Tokenizer::Encode already starts with BOS: writing it as text too would double it.
  if (tokenizer_.add_bos() || tokenizer_.bos_id() < 0) return {};
  return tokenizer_.TokenText(tokenizer_.bos_id());
}

Status Engine::SetChatFormat(const char* name) {
  if (name == nullptr || name[0] == '\0') {
    return InitChatTemplateFromGguf(file_, ChatBosText(), &chat_template_);
  }
  return chat_template_.InitFormat(name, ChatBosText());
}

}  // namespace staticlm
