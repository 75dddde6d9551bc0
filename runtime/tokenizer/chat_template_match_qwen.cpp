// Recognising Qwen2 / Qwen2.5 Instruct chat templates as ChatML. The reference is
// Qwen2.5-7B-Instruct's template (tests/reference/chat_templates/qwen2.jinja). In the canonical
// form of CanonicalizeJinja it reads:
//   {%iftools%} … tool instructions … {%else%}
//     {%ifmessages[0]['role']=='system'%}{{'<|im_start|>system\n'+messages[0]['content']+
//     '<|im_end|>\n'}}{%else%}{{'<|im_start|>system\nDEFAULT<|im_end|>\n'}}{%endif%}
//   {%endif%}
//   {%formessageinmessages%}
//     {%if(message['role']=='user')or(message['role']=='system'andnotloop.first)or
//         (message['role']=='assistant'andnotmessage.tool_calls)%}
//       {{'<|im_start|>'+message['role']+'\n'+message['content']+'<|im_end|>\n'}}
//     {%elif … tool calls and tool responses … %}…{%endif%}
//   {%endfor%}{%ifadd_generation_prompt%}{{'<|im_start|>assistant\n'}}{%endif%}
// The tools branches only print when tools or tool calls are passed, which staticlm never does;
// for plain messages this is ChatML with a default system message DEFAULT.
#include "runtime/tokenizer/chat_template_match.h"

namespace staticlm::text {

namespace {

bool Consume(std::string_view* s, std::string_view prefix) {
  if (s->substr(0, prefix.size()) != prefix) return false;
  s->remove_prefix(prefix.size());
  return true;
}

// Skips past the {%else%} or {%endif%} (`stop`) closing the {%if…%} already consumed, counting
// nested ifs; false when there is none.
bool SkipPast(std::string_view* s, std::string_view stop) {
  int depth = 1;
  while (!s->empty()) {
    if (depth == 1 && Consume(s, stop)) return true;
    if (Consume(s, "{%endif%}")) {
      if (--depth == 0) return false;
    } else if (Consume(s, "{%if")) {
      ++depth;
    } else {
      s->remove_prefix(1);
    }
  }
  return false;
}

constexpr std::string_view kSystemIf =
    "{%ifmessages[0]['role']=='system'%}{{'<|im_start|>system\n'+messages[0]['content']+"
    "'<|im_end|>\n'}}{%else%}{{'<|im_start|>system\n";
constexpr std::string_view kSystemEnd = "<|im_end|>\n'}}{%endif%}{%endif%}";
constexpr std::string_view kLoop =
    "{%formessageinmessages%}{%if(message['role']=='user')or(message['role']=='system'andnot"
    "loop.first)or(message['role']=='assistant'andnotmessage.tool_calls)%}"
    "{{'<|im_start|>'+message['role']+'\n'+message['content']+'<|im_end|>\n'}}{%elif";
constexpr std::string_view kTail =
    "{%endfor%}{%ifadd_generation_prompt%}{{'<|im_start|>assistant\n'}}{%endif%}";

}  // namespace

bool MatchQwenChatMl(std::string_view canonical, ChatParams* params) {
  std::string_view s = canonical;
  if (!Consume(&s, "{%iftools%}") || !SkipPast(&s, "{%else%}") || !Consume(&s, kSystemIf)) {
    return false;
  }
  const size_t end = s.find(kSystemEnd);
  if (end == std::string_view::npos || s.substr(0, end).find('\'') != std::string_view::npos) {
    return false;
  }
  const std::string_view default_system = s.substr(0, end);
  s.remove_prefix(end + kSystemEnd.size());
  if (!Consume(&s, kLoop) || !SkipPast(&s, "{%endif%}") || s != kTail) return false;
  params->inserts_default_system = true;
  params->default_system = std::string(default_system);
  return true;
}

}  // namespace staticlm::text
