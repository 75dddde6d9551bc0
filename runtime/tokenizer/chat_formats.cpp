#include "runtime/tokenizer/chat_formats.h"

#include <string>

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
        .user_turn_start = "",
        .user_turn_end = "",
        .end_without_prompt = "",
        .system = SystemMessageStyle::kOwnTurn,
        .starts_with_bos = false,
        .alternates = false,
        .trims_content = false,
        .system_separator = "",
        .system_preamble = "",
        .always_system = false,
        .skips_empty_system = false,
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
        .user_turn_start = "",
        .user_turn_end = "",
        .end_without_prompt = "",
        .system = SystemMessageStyle::kFirstUserPrefix,
        .starts_with_bos = true,
        .alternates = true,
        .trims_content = true,
        .system_separator = "\n\n",
        .system_preamble = "",
        .always_system = false,
        .skips_empty_system = false,
        .families = "gemma, gemma2, gemma3",
        .match = text::MatchGemma,
    },
    {
        .name = "llama3",
        .turn_start = "<|start_header_id|>",
        .assistant_role = "assistant",
        .role_end = "<|end_header_id|>\n\n",
        .end_of_turn = "<|eot_id|>",
        .after_turn = "",
        .generation_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n",
        .user_turn_start = "",
        .user_turn_end = "",
        .end_without_prompt = "",
        .system = SystemMessageStyle::kOwnTurn,
        .starts_with_bos = true,
        .alternates = false,
        .trims_content = true,
        .system_separator = "",
        // Llama 3.1+'s preamble with the date its templates fall back to.
        .system_preamble = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n",
        .always_system = true,
        .skips_empty_system = false,
        .families = "",  // GGUF's "llama" also holds SmolLM2 (chatml) and Mistral
        .match = text::MatchLlama3,
    },
    {
        .name = "phi3",
        .turn_start = "<|",
        .assistant_role = "assistant",
        .role_end = "|>\n",
        .end_of_turn = "<|end|>",
        .after_turn = "\n",
        .generation_prompt = "<|assistant|>\n",
        .user_turn_start = "",
        .user_turn_end = "",
        .end_without_prompt = "<|endoftext|>",
        .system = SystemMessageStyle::kOwnTurn,
        .starts_with_bos = false,
        .alternates = false,
        .trims_content = false,
        .system_separator = "",
        .system_preamble = "",
        .always_system = false,
        .skips_empty_system = true,
        .families = "phi3",
        .match = text::MatchPhi3,
    },
    {
        .name = "mistral",
        .turn_start = "",
        .assistant_role = "",
        .role_end = "",
        .end_of_turn = "</s>",
        .after_turn = "",
        .generation_prompt = "",
        .user_turn_start = "[INST] ",
        .user_turn_end = " [/INST]",
        .end_without_prompt = "",
        .system = SystemMessageStyle::kNone,
        .starts_with_bos = true,
        .alternates = true,
        .trims_content = false,
        .system_separator = "",
        .system_preamble = "",
        .always_system = false,
        .skips_empty_system = false,
        .families = "",  // GGUF writes Mistral as "llama"
        .match = text::MatchMistral,
    },
    {
        .name = "mistral-nemo",
        .turn_start = "",
        .assistant_role = "",
        .role_end = "",
        .end_of_turn = "</s>",
        .after_turn = "",
        .generation_prompt = "",
        .user_turn_start = "[INST]",
        .user_turn_end = "[/INST]",
        .end_without_prompt = "",
        .system = SystemMessageStyle::kLastUserPrefix,
        .starts_with_bos = true,
        .alternates = true,
        .trims_content = false,
        .system_separator = "\n\n",
        .system_preamble = "",
        .always_system = false,
        .skips_empty_system = false,
        .families = "",  // GGUF writes Mistral NeMo as "llama"
        .match = text::MatchMistralNemo,
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
  // kFormats' names; chat_formats_test checks they agree.
  return "chatml, gemma, llama3, phi3, mistral, mistral-nemo";
}

ChatParams DefaultChatParams(const ChatFormat& format) {
  ChatParams p;
  p.starts_with_bos = format.starts_with_bos;
  p.alternates = format.alternates;
  p.trims_content = format.trims_content;
  p.system_separator = std::string(format.system_separator);
  p.system_preamble = std::string(format.system_preamble);
  p.inserts_default_system = format.always_system;
  p.skips_empty_system = format.skips_empty_system;
  return p;
}

Status RecogniseChatTemplate(std::string_view jinja, const ChatFormat** format,
                             ChatParams* params) {
  *format = nullptr;
  // Every family reads the same canonical form: canonicalised once, not once per family.
  std::string canonical;
  if (!jinja.empty() && text::CanonicalizeJinja(jinja, &canonical).ok()) {
    for (const ChatFormat& f : kFormats) {
      if (f.match(canonical, params).ok()) {
        *format = &f;
        return Status::Ok();
      }
    }
  }
  *params = ChatParams();
  return Status::Error(StatusCode::kUnsupported,
                       "the chat template is not one staticlm recognises (%s)", ChatFormatNames());
}

}  // namespace staticlm
