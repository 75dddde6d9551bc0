#include "runtime/tokenizer/chat_template_match.h"

namespace staticlm::text {

namespace {

Status Unsupported(const char* why) {
  return Status::Error(StatusCode::kUnsupported, "chat template not recognised as ChatML: %s", why);
}

bool IsJinjaSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s->find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(*s, pos, hit - pos).append(to);
  }
  out.append(*s, pos, std::string::npos);
  *s = std::move(out);
}

// Reads the string literal opening at t[*i] (quote char) into out, quoted with '.
bool ReadLiteral(std::string_view t, size_t* i, std::string* out) {
  const char quote = t[(*i)++];
  out->push_back('\'');
  while (*i < t.size() && t[*i] != quote) {
    char c = t[(*i)++];
    if (c == '\\' && *i < t.size()) {
      const char e = t[(*i)++];
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      if (e != 'n' && e != 't' && e != 'r' && e != '\\' && e != '\'' && e != '"') {
        out->push_back('\\');
      }
    }
    out->push_back(c);
  }
  if (*i >= t.size()) return false;
  ++*i;
  out->push_back('\'');
  return true;
}

// Text between tags is printed unless it is whitespace that a trim marker or the
// trim_blocks / lstrip_blocks options of Hugging Face's renderer remove. trim_blocks drops
// the newline right after a block tag; lstrip_blocks drops spaces before a block tag that
// starts its line.
bool PrintsText(std::string_view text, bool at_template_start, bool after_block, bool after_trim,
                bool before_block, bool before_trim) {
  bool all_space = true;
  for (char c : text) all_space = all_space && IsJinjaSpace(c);
  if (!all_space) return true;
  if (after_trim || before_trim) return false;
  bool line_start = at_template_start;
  if (after_block && !text.empty() && text[0] == '\n') {
    text.remove_prefix(1);
    line_start = true;
  }
  if (before_block) {
    const size_t nl = text.rfind('\n');
    if (nl != std::string_view::npos) {
      text = text.substr(0, nl + 1);
    } else if (line_start) {
      text = std::string_view();
    }
  }
  return !text.empty();
}

}  // namespace

Status CanonicalizeJinja(std::string_view t, std::string* canonical) {
  std::string& out = *canonical;
  out.clear();
  bool after_block = false;  // the previous tag was {% ... %}
  bool after_trim = false;   // the previous tag ended with "-", trimming what follows
  size_t i = 0;
  while (i < t.size()) {
    size_t tag = i;
    while (tag + 1 < t.size() &&
           !(t[tag] == '{' && (t[tag + 1] == '{' || t[tag + 1] == '%' || t[tag + 1] == '#'))) {
      ++tag;
    }
    if (tag + 1 >= t.size()) tag = t.size();
    const bool before_block = tag < t.size() && t[tag + 1] == '%';
    const bool before_trim = tag + 2 < t.size() && t[tag + 2] == '-';
    if (PrintsText(t.substr(i, tag - i), i == 0, after_block, after_trim, before_block,
                   before_trim)) {
      return Unsupported("it prints literal text between its tags");
    }
    if (tag >= t.size()) break;
    const char kind = t[tag + 1];
    const std::string_view close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    i = tag + 2;
    if (kind == '#') {
      const size_t end = t.find("#}", i);
      if (end == std::string_view::npos) return Unsupported("unterminated comment");
      i = end + 2;
      continue;
    }
    out.append(t.substr(tag, 2));
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
    bool closed = false;
    bool trim_right = false;
    while (i < t.size() && !closed) {
      const char c = t[i];
      if (c == '\'' || c == '"') {
        if (!ReadLiteral(t, &i, &out)) return Unsupported("unterminated string");
      } else if ((c == '-' || c == '+') && t.substr(i + 1, 2) == close) {
        trim_right = c == '-';
        ++i;
      } else if (t.substr(i, 2) == close) {
        out.append(close);
        i += 2;
        closed = true;
      } else {
        if (!IsJinjaSpace(c)) out.push_back(c);
        ++i;
      }
    }
    if (!closed) return Unsupported("unterminated tag");
    after_block = kind == '%';
    after_trim = trim_right;
  }
  ReplaceAll(&out, "message.role", "message['role']");
  ReplaceAll(&out, "message.content", "message['content']");
  ReplaceAll(&out, "messages[0].role", "messages[0]['role']");
  ReplaceAll(&out, "messages[0].content", "messages[0]['content']");
  ReplaceAll(&out, "'+'", "");  // 'a' + 'b' is 'ab'
  return Status::Ok();
}

namespace {

constexpr std::string_view kLoopOpen = "{%formessageinmessages%}";
constexpr std::string_view kMessage =
    "{{'<|im_start|>'+message['role']+'\n'+message['content']+'<|im_end|>\n'}}";
constexpr std::string_view kTail =
    "{%endfor%}{%ifadd_generation_prompt%}{{'<|im_start|>assistant\n'}}{%endif%}";
constexpr std::string_view kFirstInLoop = "{%ifloop.firstandmessages[0]['role']!='system'%}";
constexpr std::string_view kFirstBeforeLoop = "{%ifmessages[0]['role']!='system'%}";
constexpr std::string_view kSystemOpen = "{{'<|im_start|>system\n";
constexpr std::string_view kSystemClose = "<|im_end|>\n'}}{%endif%}";

// Consumes `condition` followed by the default-system block, storing its text.
bool ConsumeDefaultSystem(std::string_view* s, std::string_view condition, std::string* text) {
  std::string_view rest = *s;
  if (!Consume(&rest, condition) || !Consume(&rest, kSystemOpen)) return false;
  const size_t end = rest.find(kSystemClose);
  if (end == std::string_view::npos) return false;
  const std::string_view body = rest.substr(0, end);
  if (body.find('\'') != std::string_view::npos) return false;
  *text = std::string(body);
  *s = rest.substr(end + kSystemClose.size());
  return true;
}

}  // namespace

bool Consume(std::string_view* s, std::string_view prefix) {
  if (s->substr(0, prefix.size()) != prefix) return false;
  s->remove_prefix(prefix.size());
  return true;
}

// Recognised (spaces, quote style, "-" trim markers and message.role vs message['role'] do
// not matter; no literal text may sit between the tags):
//   {% for message in messages %}
//     [{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n
//        DEFAULT<|im_end|>\n' }}{% endif %}]
//     {{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}
//   {% endfor %}
//   {% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
// and the same with the default-system block before the loop, conditioned on
// messages[0]['role'] != 'system'; and Qwen2.5's template (MatchQwenChatMl).
Status MatchChatMl(std::string_view canonical, ChatParams* params) {
  *params = ChatParams();
  if (MatchQwenChatMl(canonical, params)) return Status::Ok();
  std::string_view s = canonical;
  std::string* text = &params->default_system;
  bool has_default = ConsumeDefaultSystem(&s, kFirstBeforeLoop, text);
  if (!Consume(&s, kLoopOpen)) return Unsupported("no 'for message in messages' loop");
  if (!has_default) has_default = ConsumeDefaultSystem(&s, kFirstInLoop, text);
  if (!Consume(&s, kMessage)) return Unsupported("messages are not <|im_start|>role\\n...");
  if (s != kTail) return Unsupported("unexpected text after the message loop");
  params->inserts_default_system = has_default;
  return Status::Ok();
}

}  // namespace staticlm::text
