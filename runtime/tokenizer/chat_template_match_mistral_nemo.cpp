// Recognising Mistral NeMo's chat template (Mistral's "v3-tekken" [INST] layout). The reference
// is the real template of mistralai/Mistral-Nemo-Instruct-2407, committed as
// tests/reference/chat_templates/mistral_nemo.jinja, compared in the canonical form of
// CanonicalizeJinja (so indentation, trim markers and quote style do not matter).
//
// The template has tool-calling parts: [AVAILABLE_TOOLS] before the last user message when
// `tools` is given, [TOOL_CALLS] for an assistant message with tool_calls, [TOOL_RESULTS] for
// a tool message. staticlm passes neither tools nor tool calls, and a tool message without a
// tool_call_id raises in the template as the "tool" role does in staticlm. So the recogniser
// checks every piece that prints for a plain conversation exactly -- the system message taken
// off, the alternation check, BOS, the user turn with the system text in the last one, the
// assistant turn, the refusal of other roles -- and only checks that each tool part is a
// closed block in its own branch, whatever it prints.
#include "runtime/tokenizer/chat_template_match.h"

namespace staticlm::text {

namespace {

Status Unsupported(const char* why) {
  return Status::Error(StatusCode::kUnsupported, "chat template not recognised as Mistral NeMo: %s",
                       why);
}

// Up to the alternation check's message: the system message taken off, `tools` defaulted,
// the loop that raises unless user and assistant alternate (tool messages skipped).
constexpr std::string_view kHead =
    "{%ifmessages[0]['role']=='system'%}{%setsystem_message=messages[0]['content']%}"
    "{%setloop_messages=messages[1:]%}{%else%}{%setloop_messages=messages%}{%endif%}"
    "{%ifnottoolsisdefined%}{%settools=none%}{%endif%}"
    "{%setuser_messages=loop_messages|selectattr('role','equalto','user')|list%}"
    "{%setns=namespace()%}{%setns.index=0%}{%formessageinloop_messages%}"
    "{%ifnot(message['role']=='tool'ormessage['role']=='tool_results'or(message.tool_calls"
    "isdefinedandmessage.tool_callsisnotnone))%}{%if(message['role']=='user')!=(ns.index%2==0)%}"
    "{{raise_exception('";
// After the message: the loop's end, BOS, and the user branch up to its tools part.
constexpr std::string_view kUserOpen =
    "')}}{%endif%}{%setns.index=ns.index+1%}{%endif%}{%endfor%}{{bos_token}}"
    "{%formessageinloop_messages%}{%ifmessage['role']=='user'%}"
    "{%iftoolsisnotnoneand(message==user_messages[-1])%}";
// The user turn, the system text opening the last one.
constexpr std::string_view kUserTurn =
    "{%ifloop.lastandsystem_messageisdefined%}"
    "{{'[INST]'+system_message+'\n\n'+message['content']+'[/INST]'}}{%else%}"
    "{{'[INST]'+message['content']+'[/INST]'}}{%endif%}";
constexpr std::string_view kToolCallsBranch =
    "{%elif(message.tool_callsisdefinedandmessage.tool_callsisnotnone)%}";
constexpr std::string_view kAssistantTurn =
    "{%elifmessage['role']=='assistant'%}{{message['content']+eos_token}}"
    "{%elifmessage['role']=='tool_results'ormessage['role']=='tool'%}";
constexpr std::string_view kOtherRoles = "{%else%}{{raise_exception('";
constexpr std::string_view kEnd = "')}}{%endif%}{%endfor%}";

// The `{%` tags in s that open (+1) or close (-1) an if or for block; 0 for other tags.
int BlockDelta(std::string_view tag) {
  if (tag.substr(0, 4) == "{%if" || tag.substr(0, 5) == "{%for") return 1;
  if (tag == "{%endif%}" || tag == "{%endfor%}") return -1;
  return 0;
}

// Whether `body` is a sequence of closed if/for blocks and expressions: every block it opens
// it closes, and no elif/else of the enclosing if stands at its top level.
bool IsClosedBlocks(std::string_view body) {
  int depth = 0;
  for (size_t at = body.find("{%"); at != std::string_view::npos; at = body.find("{%", at + 2)) {
    const size_t end = body.find("%}", at);
    if (end == std::string_view::npos) return false;
    const std::string_view tag = body.substr(at, end + 2 - at);
    const bool branch = tag.substr(0, 6) == "{%elif" || tag == "{%else%}";
    if (branch && depth == 0) return false;
    depth += BlockDelta(tag);
    if (depth < 0) return false;
  }
  return depth == 0;
}

// Consumes closed blocks up to `next` and `next` itself.
bool SkipBlocksTo(std::string_view* s, std::string_view next) {
  for (size_t at = s->find(next); at != std::string_view::npos; at = s->find(next, at + 1)) {
    if (IsClosedBlocks(s->substr(0, at))) {
      s->remove_prefix(at + next.size());
      return true;
    }
  }
  return false;
}

// Consumes a raise_exception message: literal text without quotes, up to `next`.
bool ConsumeMessage(std::string_view* s, std::string_view next) {
  const size_t end = s->find(next);
  if (end == std::string_view::npos || s->substr(0, end).find('\'') != std::string_view::npos) {
    return false;
  }
  s->remove_prefix(end + next.size());
  return true;
}

}  // namespace

Status MatchMistralNemo(std::string_view canonical, ChatParams* params) {
  *params = ChatParams();
  std::string_view s = canonical;
  if (!Consume(&s, kHead) || !ConsumeMessage(&s, kUserOpen)) {
    return Unsupported("no system message taken off and alternation check of loop_messages");
  }
  // The tools part: closed blocks, then the {%endif%} of its if.
  if (!SkipBlocksTo(&s, "{%endif%}" + std::string(kUserTurn))) {
    return Unsupported("user turns are not [INST]USER[/INST], the system text in the last");
  }
  if (!Consume(&s, kToolCallsBranch) || !SkipBlocksTo(&s, kAssistantTurn)) {
    return Unsupported("assistant turns are not ASSISTANT</s>");
  }
  if (!SkipBlocksTo(&s, kOtherRoles) || !ConsumeMessage(&s, kEnd) || !s.empty()) {
    return Unsupported("other roles are not refused");
  }
  params->starts_with_bos = true;
  params->alternates = true;
  params->system_separator = "\n\n";
  return Status::Ok();
}

}  // namespace staticlm::text
