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
//
// Qwen3's template (tests/reference/chat_templates/qwen3.jinja) has the same tools branch, a
// system turn only when the conversation starts with one, and then a message loop that rewrites
// assistant turns: before the last user message an assistant turn keeps only the text after its
// "</think>"; after it, the last turn (or one with reasoning) is written "<think>\nREASONING\n
// </think>\n\n" + the rest. That loop is matched whole (kQwen3Rest, its canonical text) and
// rendered by ChatParams::rewrites_thinking.
#include "runtime/tokenizer/chat_template_match.h"

namespace staticlm::text {

namespace {

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
constexpr std::string_view kQwen3Rest =
    "{%setns=namespace(multi_step_tool=true,last_query_index=messages|length-1)%}{%"
    "formessageinmessages[::-1]%"
    "}{%setindex=(messages|length-1)-loop.index0%}{%ifns.multi_step_toolandmessage['role']=='user'"
    "andnot(message['content'].startswith('<tool_response>')andmessage['content'].endswith('</"
    "tool_response>'))%"
    "}{%setns.multi_step_tool=false%}{%setns.last_query_index=index%}{%endif%}{%endfor%}{%"
    "formessageinmessages%}{%if(message['role']=='user')or(message['role']=='system'andnotloop."
    "first)%"
    "}{{'<|im_start|>'+message['role']+'\n'+message['content']+'<|im_end|>\n'}}{%elifmessage['role'"
    "]=='assistant'%"
    "}{%setcontent=message['content']%}{%setreasoning_content=''%}{%ifmessage.reasoning_"
    "contentisdefinedandmessage.reasoning_contentisnotnone%"
    "}{%setreasoning_content=message.reasoning_content%}{%else%}{%if'</think>'inmessage['content']%"
    "}{%setcontent=message['content'].split('</"
    "think>')[-1].lstrip('\n')%}{%setreasoning_content=message['content'].split('</"
    "think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')%"
    "}{%endif%}{%endif%}{%ifloop.index0>ns.last_query_index%}{%ifloop.lastor(notloop."
    "lastandreasoning_content)%"
    "}{{'<|im_start|>'+message['role']+'\n<think>\n'+reasoning_content.strip('\n')+'\n</"
    "think>\n\n'+content.lstrip('\n')}"
    "}{%else%}{{'<|im_start|>'+message['role']+'\n'+content}}{%endif%}{%else%}{{'<|im_start|>'+"
    "message['role']+'\n'+content}"
    "}{%endif%}{%ifmessage.tool_calls%}{%fortool_callinmessage.tool_calls%}{%if(loop."
    "firstandcontent)or(notloop.first)%"
    "}{{'\n'}}{%endif%}{%iftool_call.function%}{%settool_call=tool_call.function%}{%endif%"
    "}{{'<tool_call>\n{\"name\": \"'}}{{tool_call.name}}{{'\", \"arguments\": "
    "'}}{%iftool_call.argumentsisstring%"
    "}{{tool_call.arguments}}{%else%}{{tool_call.arguments|tojson}}{%endif%}{{'}\n</tool_call>'}"
    "}{%endfor%}{%endif%}{{'<|im_end|>\n'}}{%elifmessage['role']=='tool'%}{%ifloop.firstor("
    "messages[loop.index0-1].role!='tool')%"
    "}{{'<|im_start|>user'}}{%endif%}{{'\n<tool_response>\n'}}{{message['content']}}{{'\n</"
    "tool_response>'}"
    "}{%ifloop.lastor(messages[loop.index0+1].role!='tool')%}{{'<|im_end|>\n'}}{%endif%}{%"
    "endif%}{%endfor%}{%ifadd_generation_prompt%}{{'<|im_start|>assistant\n'}}{%ifenable_"
    "thinkingisdefinedandenable_thinkingisfalse%"
    "}{{'<think>\n\n</think>\n\n'}}{%endif%}{%endif%}";
constexpr std::string_view kQwen3System =
    "{%ifmessages[0]['role']=='system'%}{{'<|im_start|>system\n'+messages[0]['content']+"
    "'<|im_end|>\n'}}{%endif%}{%endif%}";
constexpr std::string_view kTail =
    "{%endfor%}{%ifadd_generation_prompt%}{{'<|im_start|>assistant\n'}}{%endif%}";

}  // namespace

bool MatchQwenChatMl(std::string_view canonical, ChatParams* params) {
  std::string_view s = canonical;
  if (!Consume(&s, "{%iftools%}") || !SkipPast(&s, "{%else%}")) return false;
  if (Consume(&s, kQwen3System)) {
    if (s != kQwen3Rest) return false;
    params->rewrites_thinking = true;
    return true;
  }
  if (!Consume(&s, kSystemIf)) return false;
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
