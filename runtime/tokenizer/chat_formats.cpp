#include "runtime/tokenizer/chat_formats.h"

#include "runtime/tokenizer/chat_template_match.h"

namespace staticlm {
namespace {

constexpr ChatFormat kFormats[] = {
    {
        .name = "chatml",
        .turn_start = "<|im_start|>",
        .assistant_role = "assistant",
        .role_end = "\n",
        .end_of_turn = "<|im_end|>",
        .after_turn = "\n",
        .generation_prompt = "<|im_start|>assistant\n",
        .system = SystemMessageStyle::kOwnTurn,
        .starts_with_bos = false,
        .alternates = false,
        .trims_content = false,
        .system_separator = "",
        .families = "qwen2, qwen3",
        .match = text::MatchChatMl,
    },
    {
        .name = "gemma",
        .turn_start = "<start_of_turn>",
        .assistant_role = "model",
        .role_end = "\n",
        .end_of_turn = "<end_of_turn>",
        .after_turn = "\n",
        .generation_prompt = "<start_of_turn>model\n",
        .system = SystemMessageStyle::kFirstUserPrefix,
        .starts_with_bos = true,
        .alternates = true,
        .trims_content = true,
        .system_separator = "\n\n",
        .families = "gemma, gemma2, gemma3",
        .match = text::MatchGemma,
    },
};

// True when `name` is one of the ", "-separated names in `list`.
bool InList(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t comma = list.find(", ");
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 2);
  }
  return false;
}

}  // namespace

const ChatFormat* FindChatFormat(std::string_view name) {
  for (const ChatFormat& f : kFormats) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

const ChatFormat* ChatFormatOfFamily(std::string_view architecture) {
  for (const ChatFormat& f : kFormats) {
    if (!architecture.empty() && InList(f.families, architecture)) return &f;
  }
  return nullptr;
}

const char* ChatFormatNames() {
  return "chatml, gemma";  // kFormats' names; chat_formats_test checks they agree
}

ChatParams DefaultChatParams(const ChatFormat& format) {
  ChatParams p;
  p.starts_with_bos = format.starts_with_bos;
  p.alternates = format.alternates;
  p.trims_content = format.trims_content;
  p.system_separator = std::string(format.system_separator);
  return p;
}

Status RecogniseChatTemplate(std::string_view jinja, const ChatFormat** format,
                             ChatParams* params) {
  *format = nullptr;
  for (const ChatFormat& f : kFormats) {
    if (f.match(jinja, params).ok()) {
      *format = &f;
      return Status::Ok();
    }
  }
  *params = ChatParams();
  return Status::Error(StatusCode::kUnsupported,
                       "the chat template is not one staticlm recognises (%s)", ChatFormatNames());
}

}  // namespace staticlm
