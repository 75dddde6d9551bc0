// ChatTemplate: formats a conversation the way the model's own chat template does, for the
// families of chat_formats.h (ChatML, Gemma, Llama 3, Phi-3,
// Mistral [INST], Mistral NeMo).
//
// The model ships its template as Jinja text (tokenizer.chat_template). Rather than run a
// Jinja interpreter, Init recognises the template as one family's (chat_formats.h) and
// extracts its parameters (ChatML: a default system message, as SmolLM2's "You are a helpful
// AI assistant named SmolLM, trained by Hugging Face"; Gemma: the separator after the system
// text). A template of any other shape is kUnsupported, so staticlm never silently formats a
// prompt differently from the model's template. InitFormat forces a family's reference
// format instead (--chat-template NAME), for models without a template.
//
// BOS: Gemma's template starts with {{ bos_token }}, while Tokenizer::Encode prepends BOS
// itself when the file's add_bos_token says so; rendering both would give two BOS tokens.
// So Init takes `bos_text`, what to write for {{ bos_token }}: empty when the tokenizer adds
// BOS (Gemma's files do), the BOS token's text when it does not. Either way the text encodes
// to one BOS, as transformers' apply_chat_template(tokenize=True) does (it renders "<bos>"
// and tokenizes without adding specials).
//
// Message text is copied verbatim (trimmed where the family's template trims): content
// holding "<|im_end|>" would become a control token if the result is encoded with
// parse_special, exactly as with the Jinja template.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "platform/status.h"
#include "runtime/tokenizer/chat_formats.h"

namespace staticlm {

struct ChatMessage {
  const char* role;     // "system", "user", "assistant", ...; NUL-terminated, borrowed
  const char* content;  // NUL-terminated, borrowed
};

class ChatTemplate {
 public:
  // Init only; allocates. Recognises `jinja` (chat_formats.h). kUnsupported for an empty or
  // unrecognised template, which leaves the object without a format. `bos_text`: see above.
  Status Init(std::string_view jinja, std::string_view bos_text = {});

  // Init only; allocates. Forces the reference format of the family `name` ("chatml",
  // "gemma", "llama3", "phi3", "mistral", "mistral-nemo"): the family's reference template.
  // kInvalidArgument for an unknown name, which leaves the object as it was.
  Status InitFormat(std::string_view name, std::string_view bos_text = {});

  // Init only. Leaves the object without a format; FormatChat and FormatContinuation then
  // fail with `reason` (copied, truncated to one Status message).
  void Disable(const char* reason);

  // Run-phase safe: no allocation. Writes the whole conversation msgs[0 .. n) to
  // out[0 .. *n_out) (no NUL terminator), followed by the generation prompt when
  // `add_generation_prompt`. kInvalidArgument for a null role or content, roles that do not
  // alternate where the template requires it, or text that does not fit in `cap`;
  // kInvalidState without a format (the reason given to Disable).
  Status FormatChat(const ChatMessage* msgs, size_t n, bool add_generation_prompt, char* out,
                    size_t cap, size_t* n_out) const;

  // Run-phase safe: no allocation. For multi-turn chat that keeps the KV cache: formats
  // msgs[0 .. n) as the next turn after an assistant reply whose final end-of-turn token
  // (format()->end_of_turn) is already in the cache, i.e. the text the full template would
  // produce from there on: format()->after_turn + the messages (+ the generation prompt).
  // Never inserts a default system message or the system prefix. Errors as FormatChat.
  // Mistral NeMo's template writes the system text into the last user message, so a full
  // rendering of a longer conversation moves it; the cache keeps it in the turn it came with.
  Status FormatContinuation(const ChatMessage* msgs, size_t n, bool add_generation_prompt,
                            char* out, size_t cap, size_t* n_out) const;

  // The format in use; nullptr without one.
  const ChatFormat* format() const { return format_; }
  const ChatParams& params() const { return params_; }
  // The default system message, if the template inserts one.
  bool inserts_default_system() const { return params_.inserts_default_system; }
  std::string_view default_system() const { return params_.default_system; }

 private:
  Status Unavailable() const;

  const ChatFormat* format_ = nullptr;
  ChatParams params_;
  std::string bos_text_;
  char unavailable_[240] = "the model has no chat template (tokenizer.chat_template)";
};

}  // namespace staticlm
