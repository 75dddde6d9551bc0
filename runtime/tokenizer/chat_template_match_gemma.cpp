// Recognising Gemma chat templates. The reference is Gemma 3's instruct template (committed
// as tests/reference/chat_templates/gemma3.jinja, with its source); in the canonical form of
// CanonicalizeJinja it reads, piece by piece:
//   [{{bos_token}}]
//   {%ifmessages[0]['role']=='system'%}
//     {%ifmessages[0]['content']isstring%}{%setfirst_user_prefix=messages[0]['content']+'SEP'%}
//     {%else%}{%setfirst_user_prefix=messages[0]['content'][0]['text']+'SEP'%}{%endif%}
//     {%setloop_messages=messages[1:]%}
//   {%else%}{%setfirst_user_prefix=''%}{%setloop_messages=messages%}{%endif%}
//   {%formessageinloop_messages%}
//     [{%if(message['role']=='user')!=(loop.index0%2==0)%}{{raise_exception('…')}}{%endif%}]
//     {%if(message['role']=='assistant')%}{%setrole='model'%}{%else%}{%setrole=message['role']%}
//     {%endif%}
//     {{'<start_of_turn>'+role+'\n'+(first_user_prefixifloop.firstelse'')}}
//     {%ifmessage['content']isstring%}{{message['content']|trim}}{%elif…%}…{%endif%}
//     {{'<end_of_turn>\n'}}
//   {%endfor%}
//   {%ifadd_generation_prompt%}{{'<start_of_turn>model\n'}}{%endif%}
// Variants accepted: no {{bos_token}}; a single `set first_user_prefix` without the string /
// list branches; any separator SEP; no alternation check; content printed without `trim`, or
// without the `is string` block (its other branches only concern list content, which staticlm
// never passes); parentheses around the assistant test. Anything else is kUnsupported.
#include "runtime/tokenizer/chat_template_match.h"

namespace staticlm::text {

namespace {

Status Unsupported(const char* why) {
  return Status::Error(StatusCode::kUnsupported, "chat template not recognised as Gemma: %s", why);
}

// Consumes "{%setfirst_user_prefix=" + source + "+'SEP'%}", storing SEP.
bool ConsumePrefixSet(std::string_view* s, std::string_view source, std::string* separator) {
  std::string_view rest = *s;
  if (!Consume(&rest, "{%setfirst_user_prefix=") || !Consume(&rest, source) ||
      !Consume(&rest, "+'")) {
    return false;
  }
  const size_t end = rest.find("'%}");
  if (end == std::string_view::npos) return false;
  const std::string_view sep = rest.substr(0, end);
  if (sep.find('\'') != std::string_view::npos) return false;
  *separator = std::string(sep);
  *s = rest.substr(end + 3);
  return true;
}

// The system block, up to the loop.
bool ConsumeSystem(std::string_view* s, std::string* separator) {
  if (!Consume(s, "{%ifmessages[0]['role']=='system'%}")) return false;
  if (Consume(s, "{%ifmessages[0]['content']isstring%}")) {
    std::string list_separator;
    if (!ConsumePrefixSet(s, "messages[0]['content']", separator) || !Consume(s, "{%else%}") ||
        !ConsumePrefixSet(s, "messages[0]['content'][0]['text']", &list_separator) ||
        list_separator != *separator || !Consume(s, "{%endif%}")) {
      return false;
    }
  } else if (!ConsumePrefixSet(s, "messages[0]['content']", separator)) {
    return false;
  }
  return Consume(s,
                 "{%setloop_messages=messages[1:]%}{%else%}{%setfirst_user_prefix=''%}"
                 "{%setloop_messages=messages%}{%endif%}");
}

// The optional alternation check; any exception message.
bool ConsumeAlternation(std::string_view* s) {
  std::string_view rest = *s;
  if (!Consume(&rest, "{%if(message['role']=='user')!=(loop.index0%2==0)%}{{raise_exception('")) {
    return false;
  }
  const size_t end = rest.find("')}}{%endif%}");
  if (end == std::string_view::npos) return false;
  *s = rest.substr(end + 13);
  return true;
}

bool ConsumeRole(std::string_view* s) {
  if (!Consume(s, "{%if(message['role']=='assistant')%}") &&
      !Consume(s, "{%ifmessage['role']=='assistant'%}")) {
    return false;
  }
  return Consume(s, "{%setrole='model'%}{%else%}{%setrole=message['role']%}{%endif%}");
}

// "{{message['content']|trim}}" or "{{message['content']}}".
bool ConsumeContentPrint(std::string_view* s, bool* trims) {
  *trims = Consume(s, "{{message['content']|trim}}");
  return *trims || Consume(s, "{{message['content']}}");
}

// Skips to the {%endif%} closing the {%if…%} already consumed, counting nested ifs.
bool SkipToEndif(std::string_view* s) {
  int depth = 1;
  while (!s->empty()) {
    if (Consume(s, "{%endif%}")) {
      if (--depth == 0) return true;
    } else if (Consume(s, "{%if")) {
      ++depth;
    } else {
      s->remove_prefix(1);
    }
  }
  return false;
}

bool ConsumeContent(std::string_view* s, bool* trims) {
  if (!Consume(s, "{%ifmessage['content']isstring%}")) return ConsumeContentPrint(s, trims);
  if (!ConsumeContentPrint(s, trims)) return false;
  if (Consume(s, "{%endif%}")) return true;
  // Other branches (list content) must follow, not more output for strings.
  if (s->substr(0, 6) != "{%elif" && s->substr(0, 8) != "{%else%}") return false;
  return SkipToEndif(s);
}

constexpr std::string_view kLoop = "{%formessageinloop_messages%}";
constexpr std::string_view kTurnOpen =
    "{{'<start_of_turn>'+role+'\n'+(first_user_prefixifloop.firstelse'')}}";
constexpr std::string_view kTail =
    "{{'<end_of_turn>\n'}}{%endfor%}{%ifadd_generation_prompt%}{{'<start_of_turn>model\n'}}"
    "{%endif%}";

}  // namespace

Status MatchGemma(std::string_view canonical, ChatParams* params) {
  *params = ChatParams();
  std::string_view s = canonical;
  params->starts_with_bos = Consume(&s, "{{bos_token}}");
  if (!ConsumeSystem(&s, &params->system_separator)) {
    return Unsupported("no first_user_prefix taken from a leading system message");
  }
  if (!Consume(&s, kLoop)) return Unsupported("no 'for message in loop_messages' loop");
  params->alternates = ConsumeAlternation(&s);
  if (!ConsumeRole(&s)) return Unsupported("the assistant's role is not written 'model'");
  if (!Consume(&s, kTurnOpen)) return Unsupported("turns do not open with <start_of_turn>role\\n");
  if (!ConsumeContent(&s, &params->trims_content)) {
    return Unsupported("the message content is not printed as it is or trimmed");
  }
  if (s != kTail) return Unsupported("unexpected text after the message content");
  return Status::Ok();
}

}  // namespace staticlm::text
