// Recognising the Llama 3, Phi-3 and Mistral [INST] chat templates. The references are the real
// models' templates committed in tests/reference/chat_templates/ (llama3.jinja: Llama 3.2
// Instruct; phi3.jinja: Phi-3.5 mini instruct; mistral.jinja: Mistral 7B Instruct v0.2), compared
// in the canonical form of CanonicalizeJinja.
//
// Llama 3.1+ templates carry tool-calling branches (custom_tools, tools_in_user_message,
// ipython/tool roles) that only print when tools are passed, which staticlm never does, and
// differ between 3.1, 3.2 and 3.3 there. So the recogniser checks the pieces that print for a
// plain conversation -- BOS, the system block with its preamble and trimmed text, the message
// turn, the generation prompt -- and extracts the date the template falls back to when
// date_string is not given (transformers passes strftime_now's date instead when it has one:
// give staticlm's output the template's fixed date). Llama 3.0's short template is matched whole.
// Phi-3 and Mistral templates are matched whole; Phi-3's test for empty system content is
// optional (Phi-3 mini 4k/128k have none), as is Mistral's alternation check's message.
#include "runtime/tokenizer/chat_template_match.h"

namespace staticlm::text {

namespace {

Status Unsupported(const char* family, const char* why) {
  return Status::Error(StatusCode::kUnsupported, "chat template not recognised as %s: %s", family,
                       why);
}

bool Contains(std::string_view s, std::string_view piece) {
  return s.find(piece) != std::string_view::npos;
}

bool EndsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// Llama 3.x: the pieces every plain conversation goes through.
constexpr std::string_view kLlamaTurn =
    "{{'<|start_header_id|>'+message['role']+'<|end_header_id|>\n\n'+message['content']|trim+"
    "'<|eot_id|>'}}";
constexpr std::string_view kLlamaTail =
    "{%ifadd_generation_prompt%}{{'<|start_header_id|>assistant<|end_header_id|>\n\n'}}"
    "{%endif%}";
constexpr std::string_view kLlamaSystemTake =
    "{%ifmessages[0]['role']=='system'%}{%setsystem_message=messages[0]['content']|trim%}"
    "{%setmessages=messages[1:]%}{%else%}{%setsystem_message=''%}{%endif%}"
    "{{'<|start_header_id|>system<|end_header_id|>\n\n'}}";
constexpr std::string_view kLlamaPreamble =
    "{{'Cutting Knowledge Date: December 2023\n'}}{{'Today Date: '+date_string+'\n\n'}}";
constexpr std::string_view kLlamaSystemEnd = "{{system_message}}{{'<|eot_id|>'}}";
constexpr std::string_view kLlamaDateSet = "{%setdate_string='";
// Llama 3.0's whole template (after {{bos_token}} is taken off, it has none).
constexpr std::string_view kLlama30 =
    "{%setloop_messages=messages%}{%formessageinloop_messages%}{%setcontent='<|start_header_id|>'"
    "+message['role']+'<|end_header_id|>\n\n'+message['content']|trim+'<|eot_id|>'%}"
    "{%ifloop.index0==0%}{%setcontent=bos_token+content%}{%endif%}{{content}}{%endfor%}"
    "{%ifadd_generation_prompt%}{{'<|start_header_id|>assistant<|end_header_id|>\n\n'}}"
    "{%endif%}";

// The date literal of {%set date_string = '…' %}.
bool LlamaFallbackDate(std::string_view s, std::string* date) {
  const size_t at = s.find(kLlamaDateSet);
  if (at == std::string_view::npos) return false;
  s.remove_prefix(at + kLlamaDateSet.size());
  const size_t end = s.find("'%}");
  if (end == std::string_view::npos || end > 32) return false;
  *date = std::string(s.substr(0, end));
  return true;
}

// Phi-3: the system test, with or without "and message['content']".
constexpr std::string_view kPhiLoop = "{%formessageinmessages%}";
constexpr std::string_view kPhiSystemIf = "{%ifmessage['role']=='system'";
constexpr std::string_view kPhiSystemIfContent = "andmessage['content']";
constexpr std::string_view kPhiTurns =
    "%}{{'<|system|>\n'+message['content']+'<|end|>\n'}}"
    "{%elifmessage['role']=='user'%}{{'<|user|>\n'+message['content']+'<|end|>\n'}}"
    "{%elifmessage['role']=='assistant'%}{{'<|assistant|>\n'+message['content']+'<|end|>\n'}}"
    "{%endif%}{%endfor%}{%ifadd_generation_prompt%}{{'<|assistant|>\n'}}{%else%}{{eos_token}}"
    "{%endif%}";

// Mistral v0.1 / v0.2.
constexpr std::string_view kMistralCheck =
    "{%if(message['role']=='user')!=(loop.index0%2==0)%}{{raise_exception('";
constexpr std::string_view kMistralTurns =
    "{%ifmessage['role']=='user'%}{{'[INST] '+message['content']+' [/INST]'}}"
    "{%elifmessage['role']=='assistant'%}{{message['content']+eos_token}}{%else%}"
    "{{raise_exception('";
constexpr std::string_view kMistralEnd = "')}}{%endif%}{%endfor%}";

// Consumes "…')}}{%endif%}" after a raise_exception(' of the alternation check.
bool ConsumeRaise(std::string_view* s) {
  const size_t end = s->find("')}}{%endif%}");
  if (end == std::string_view::npos || s->substr(0, end).find('\'') != std::string_view::npos) {
    return false;
  }
  s->remove_prefix(end + 13);
  return true;
}

}  // namespace

Status MatchLlama3(std::string_view canonical, ChatParams* params) {
  *params = ChatParams();
  std::string_view s = canonical;
  params->starts_with_bos = true;
  params->trims_content = true;
  if (s == kLlama30) return Status::Ok();
  if (!Consume(&s, "{{bos_token}}")) return Unsupported("Llama 3", "no {{ bos_token }} first");
  if (!Contains(s, kLlamaTurn)) {
    return Unsupported("Llama 3", "turns are not <|start_header_id|>role<|end_header_id|>");
  }
  if (!EndsWith(s, "{%endfor%}" + std::string(kLlamaTail))) {
    return Unsupported("Llama 3", "no assistant header as the generation prompt");
  }
  std::string date;
  const size_t system = s.find(kLlamaSystemTake);
  const size_t preamble = s.find(kLlamaPreamble);
  if (system == std::string_view::npos || preamble == std::string_view::npos || preamble < system ||
      s.find(kLlamaSystemEnd) < preamble || !LlamaFallbackDate(s, &date)) {
    return Unsupported("Llama 3", "no system turn with the knowledge and date preamble");
  }
  params->inserts_default_system = true;
  params->system_preamble = "Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n";
  return Status::Ok();
}

Status MatchPhi3(std::string_view canonical, ChatParams* params) {
  *params = ChatParams();
  std::string_view s = canonical;
  if (!Consume(&s, kPhiLoop) || !Consume(&s, kPhiSystemIf)) {
    return Unsupported("Phi-3", "no system test in a 'for message in messages' loop");
  }
  params->skips_empty_system = Consume(&s, kPhiSystemIfContent);
  if (s != kPhiTurns) return Unsupported("Phi-3", "turns are not <|role|>\\n...<|end|>\\n");
  return Status::Ok();
}

Status MatchMistral(std::string_view canonical, ChatParams* params) {
  *params = ChatParams();
  std::string_view s = canonical;
  params->starts_with_bos = Consume(&s, "{{bos_token}}");
  if (!Consume(&s, kPhiLoop)) {
    return Unsupported("Mistral", "no 'for message in messages' loop");
  }
  params->alternates = Consume(&s, kMistralCheck);
  if (params->alternates && !ConsumeRaise(&s)) {
    return Unsupported("Mistral", "unexpected alternation check");
  }
  if (!Consume(&s, kMistralTurns) || s.size() < kMistralEnd.size() || !EndsWith(s, kMistralEnd) ||
      s.substr(0, s.size() - kMistralEnd.size()).find('\'') != std::string_view::npos) {
    return Unsupported("Mistral", "turns are not [INST] user [/INST]assistant</s>");
  }
  return Status::Ok();
}

}  // namespace staticlm::text
