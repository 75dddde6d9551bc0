// libFuzzer target: the chat-template recogniser (runtime/tokenizer/chat_formats.h,
// chat_template_match*.cpp). Any bytes are taken as a model's tokenizer.chat_template; one
// that is recognised must then format a conversation (with and without its system message,
// and as a continuation) within the buffer it is given.
// Seeds: the templates of SmolLM2, Gemma 3, Llama 3.2, Phi-3.5, Mistral v0.2, Mistral NeMo,
// Qwen2.5 and Qwen3 (tests/reference/chat_templates/), and their prefixes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "runtime/tokenizer/chat_template.h"

namespace {

using namespace staticlm;

const ChatMessage kConversation[] = {
    {"system", "  Be brief.\n"},
    {"user", "Hello <|im_end|> there"},
    {"assistant", "\tHi!  "},
    {"user", "Bye"},
};

void Format(const ChatTemplate& chat, const ChatMessage* msgs, size_t n) {
  static char out[4096];
  size_t written = 0;
  for (bool prompt : {false, true}) {
    if (chat.FormatChat(msgs, n, prompt, out, sizeof(out), &written).ok() &&
        written > sizeof(out)) {
      std::fprintf(stderr, "chat_template_fuzz: FormatChat wrote past its buffer\n");
      std::abort();
    }
    (void)chat.FormatContinuation(msgs, n, prompt, out, sizeof(out), &written);
    // Too small a buffer must fail cleanly, never write past it.
    (void)chat.FormatChat(msgs, n, prompt, out, 7, &written);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view jinja(reinterpret_cast<const char*>(data), size);
  ChatTemplate chat;
  if (!chat.Init(jinja, "<bos>").ok()) return 0;
  Format(chat, kConversation, 4);
  Format(chat, kConversation + 1, 3);
  return 0;
}
