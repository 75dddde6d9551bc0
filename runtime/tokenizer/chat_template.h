// ChatTemplate: formats a conversation the way the model's own chat template does, for
// ChatML templates (<|im_start|>role\ncontent<|im_end|>\n per message).
//
// The model ships its template as Jinja text (tokenizer.chat_template). Rather than run a
// Jinja interpreter, Init recognises the ChatML template shapes below and extracts their one
// parameter, the default system message that some insert when the conversation does not
// start with a system message (SmolLM2: "You are a helpful AI assistant named SmolLM,
// trained by Hugging Face"). A template of any other shape is kUnsupported, so staticlm
// never silently formats a prompt differently from the model's template.
//
// Recognised (spaces, quote style, "-" trim markers and message.role vs message['role'] do
// not matter; no literal text may sit between the tags):
//   {% for message in messages %}
//     [{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n
//        DEFAULT<|im_end|>\n' }}{% endif %}]
//     {{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}
//   {% endfor %}
//   {% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
// and the same with the default-system block before the loop, conditioned on
// messages[0]['role'] != 'system'.
//
// Message text is copied verbatim: content holding "<|im_end|>" would become a control
// token if the result is encoded with parse_special, exactly as with the Jinja template.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace staticlm {

struct ChatMessage {
  const char* role;     // "system", "user", "assistant", ...; NUL-terminated, borrowed
  const char* content;  // NUL-terminated, borrowed
};

class ChatTemplate {
 public:
  // Init only; allocates (a copy of the default system text). kUnsupported for an empty
  // or unrecognised template.
  Status Init(std::string_view jinja_template);

  // Run-phase safe: no allocation. Writes the whole conversation msgs[0 .. n) to
  // out[0 .. *n_out) (no NUL terminator), followed by "<|im_start|>assistant\n" when
  // `add_generation_prompt`. kInvalidArgument for a null role or content, or when the text
  // does not fit in `cap`; kInvalidState before Init (a model without a chat template).
  Status FormatChat(const ChatMessage* msgs, size_t n, bool add_generation_prompt, char* out,
                    size_t cap, size_t* n_out) const;

  // Run-phase safe: no allocation. For multi-turn chat that keeps the KV cache: formats
  // msgs[0 .. n) as the next turn after an assistant reply whose final <|im_end|> token is
  // already in the cache, i.e. the text the full template would produce from there on:
  // "\n" + the messages (+ "<|im_start|>assistant\n" when `add_generation_prompt`). Never
  // inserts the default system message. Errors as FormatChat.
  Status FormatContinuation(const ChatMessage* msgs, size_t n, bool add_generation_prompt,
                            char* out, size_t cap, size_t* n_out) const;

  // The default system message, if the template inserts one.
  bool inserts_default_system() const { return inserts_default_system_; }
  std::string_view default_system() const { return default_system_; }

 private:
  bool initialized_ = false;
  bool inserts_default_system_ = false;
  std::string default_system_;
};

}  // namespace staticlm
