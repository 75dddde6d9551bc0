// Recognising the Jinja chat templates of the families in chat_formats.h. Init only. A template
// is canonicalised once (CanonicalizeJinja); every family's matcher reads that canonical form.
#pragma once

#include <string>
#include <string_view>

#include "platform/status.h"
#include "runtime/tokenizer/chat_formats.h"

namespace staticlm::text {

// Rewrites a Jinja template into a canonical form: tag contents without whitespace or trim
// markers, string literals unescaped in single quotes, adjacent literals joined, and
// message.role / message.content spelled with subscripts. Text between tags is dropped when
// Jinja would not print it (trim markers, or trim_blocks/lstrip_blocks as Hugging Face
// renders templates); any other text between tags is kUnsupported. Allocates.
Status CanonicalizeJinja(std::string_view jinja, std::string* canonical);

// Consumes `prefix` from the front of *s when *s starts with it; the recognisers' step over a
// canonical template.
bool Consume(std::string_view* s, std::string_view prefix);

// Recognises the canonical form of a ChatML template (shapes in chat_template_match.cpp) and
// extracts its default system message, if any. kUnsupported for any other template.
Status MatchChatMl(std::string_view canonical, ChatParams* params);

// Recognises the canonical form of a Qwen2 / Qwen2.5 or Qwen3 template
// (chat_template_match_qwen.cpp) as ChatML and extracts its default system message (Qwen2.5) or
// thinking rewrite (Qwen3). False for any other template.
bool MatchQwenChatMl(std::string_view canonical, ChatParams* params);

// Recognises the canonical form of a Gemma template (shapes in chat_template_match_gemma.cpp):
// whether it starts with {{ bos_token }}, checks that roles alternate and trims content, and the
// separator after the system text. kUnsupported for any other template.
Status MatchGemma(std::string_view canonical, ChatParams* params);

// Recognise the canonical forms of Llama 3.x, Phi-3 and Mistral [INST] (v0.1 / v0.2) templates
// (shapes in chat_template_match_families.cpp) and extract their parameters: Llama 3.1+'s system
// preamble with the template's fallback date, whether Phi-3 leaves out an empty system message,
// whether Mistral checks alternation. kUnsupported for any other template.
Status MatchLlama3(std::string_view canonical, ChatParams* params);
Status MatchPhi3(std::string_view canonical, ChatParams* params);
Status MatchMistral(std::string_view canonical, ChatParams* params);

// Recognises the canonical form of Mistral NeMo's template (chat_template_match_mistral_nemo.cpp):
// [INST]USER[/INST] without spaces, the system text in the last user message, tool parts that print
// only with tools. kUnsupported for any other template.
Status MatchMistralNemo(std::string_view canonical, ChatParams* params);

}  // namespace staticlm::text
