#include "runtime/tokenizer/chat_template.h"

#include <cstdio>
#include <cstring>

#include "runtime/tokenizer/chat_thinking.h"
#include "runtime/tokenizer/utf8.h"

namespace staticlm {

namespace {

// Appends to a caller's buffer, remembering whether anything did not fit.
struct BufferWriter {
  char* out;
  size_t cap;
  size_t n = 0;
  bool overflow = false;

  void Put(std::string_view s) {
    if (overflow || s.size() > cap - n) {
      overflow = true;
      return;
    }
    if (!s.empty()) std::memcpy(out + n, s.data(), s.size());
    n += s.size();
  }
};

// Python's str.isspace, which Jinja's `trim` (str.strip) uses.
bool IsPythonSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// The length of the well-formed UTF-8 sequence at s[i], 0 when ill-formed.
size_t SequenceAt(std::string_view s, size_t i) {
  const auto b = static_cast<uint8_t>(s[i]);
  const size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
  if (len == 0 || len > s.size() - i) return 0;
  return text::IsValidUtf8(s.substr(i, len), nullptr) ? len : 0;
}

// Whether the well-formed sequence at s[i] is a space.
bool SpaceAt(std::string_view s, size_t i) {
  uint32_t cp = 0;
  text::DecodeValidUtf8(s.data() + i, &cp);
  return IsPythonSpace(cp);
}

// Jinja's `trim` on UTF-8 text; stops at ill-formed bytes (the tokenizer rejects them later).
std::string_view TrimPythonSpace(std::string_view s) {
  for (size_t len; !s.empty() && (len = SequenceAt(s, 0)) > 0 && SpaceAt(s, 0);) {
    s.remove_prefix(len);
  }
  while (!s.empty()) {
    size_t start = s.size() - 1;
    while (start > 0 && s.size() - start < 4 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) {
      --start;
    }
    const size_t len = SequenceAt(s, start);
    if (len == 0 || len != s.size() - start || !SpaceAt(s, start)) break;
    s.remove_suffix(len);
  }
  return s;
}

// Writes `prefix` and the system separator when `prefix` is not null.
void PutSystemPrefix(BufferWriter* w, const ChatParams& p, const char* prefix) {
  if (prefix == nullptr) return;
  w->Put(prefix);
  w->Put(p.system_separator);
}

void PutTurn(BufferWriter* w, const ChatFormat& f, const ChatParams& p, std::string_view role,
             const char* prefix, std::string_view content) {
  const std::string_view text = p.trims_content ? TrimPythonSpace(content) : content;
  if (role == "user" && !f.user_turn_start.empty()) {
    w->Put(f.user_turn_start);
    PutSystemPrefix(w, p, prefix);
    w->Put(text);
    w->Put(f.user_turn_end);
    return;
  }
  w->Put(f.turn_start);
  w->Put(role == "assistant" ? f.assistant_role : role);
  w->Put(f.role_end);
  PutSystemPrefix(w, p, prefix);
  if (role == "system") w->Put(p.system_preamble);
  w->Put(text);
  w->Put(f.end_of_turn);
  w->Put(f.after_turn);
}

// The template's own refusals: a system message where it has no system role, roles other than
// user and assistant where it only has those (Mistral), roles that do not alternate.
Status CheckRole(const ChatFormat& f, const ChatParams& p, std::string_view role, size_t k) {
  if (f.system == SystemMessageStyle::kNone && role == "system") {
    return Status::Error(StatusCode::kInvalidArgument,
                         "the chat template has no system role (chat format %s)", f.name);
  }
  if (!f.user_turn_start.empty() && role != "user" && role != "assistant") {
    return Status::Error(StatusCode::kInvalidArgument,
                         "the chat template has only user and assistant roles (chat format %s)",
                         f.name);
  }
  // The template's own test: a user message at every even index and only there.
  if (p.alternates && (role == "user") != (k % 2 == 0)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "chat roles must alternate user/assistant/user/assistant/...");
  }
  return Status::Ok();
}

// Qwen3: the index of the last user message that is not a tool response; n - 1 when none.
size_t LastQueryIndex(const ChatMessage* msgs, size_t n) {
  for (size_t k = n; k-- > 0;) {
    const std::string_view c = msgs[k].content;
    const bool tool_response = c.substr(0, 15) == "<tool_response>" && c.size() >= 16 &&
                               c.substr(c.size() - 16) == "</tool_response>";
    if (std::strcmp(msgs[k].role, "user") == 0 && !tool_response) return k;
  }
  return n - 1;
}

// Qwen3's assistant turn k: before the last query only the answer; after it, the last turn
// (or one with reasoning) with its <think> block normalised.
void PutThinkingTurn(BufferWriter* w, const ChatFormat& f, const ChatMessage* msgs, size_t n,
                     size_t k, size_t last_query) {
  const text::ThinkingSplit split = text::SplitThinking(msgs[k].content);
  w->Put(f.turn_start);
  w->Put(f.assistant_role);
  w->Put(f.role_end);
  if (k > last_query && (k == n - 1 || !split.reasoning.empty())) {
    w->Put("<think>\n");
    w->Put(text::StripNewlines(split.reasoning, true, true));
    w->Put("\n</think>\n\n");
    w->Put(text::StripNewlines(split.answer, true, false));
  } else {
    w->Put(split.answer);
  }
  w->Put(f.end_of_turn);
  w->Put(f.after_turn);
}

// The turns of msgs[0 .. n), turn `prefix_at` opening with `system_prefix` (and the
// separator) when it is not null.
Status PutTurns(BufferWriter* w, const ChatFormat& f, const ChatParams& p, const ChatMessage* msgs,
                size_t n, const char* system_prefix, size_t prefix_at) {
  for (size_t k = 0; k < n; ++k) {
    const std::string_view role = msgs[k].role;
    STATICLM_RETURN_IF_ERROR(CheckRole(f, p, role, k));
    if (p.skips_empty_system && role == "system" && msgs[k].content[0] == '\0') continue;
    if (p.rewrites_thinking && role == "assistant") {
      PutThinkingTurn(w, f, msgs, n, k, LastQueryIndex(msgs, n));
      continue;
    }
    PutTurn(w, f, p, role, k == prefix_at ? system_prefix : nullptr, msgs[k].content);
  }
  return Status::Ok();
}

Status CheckMessages(const ChatMessage* msgs, size_t n) {
  if (n > 0 && msgs == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "chat messages are null");
  }
  for (size_t i = 0; i < n; ++i) {
    if (msgs[i].role == nullptr || msgs[i].content == nullptr) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "chat message with a null role or content");
    }
  }
  return Status::Ok();
}

// Where a leading system message msgs[0] goes: its text and the turn it opens, or (*prefix
// null) a turn of its own or nowhere. Takes it off msgs when it opens a user turn. Mistral
// NeMo's template puts it in the last message only when that is a user's (loop.last) and
// drops it otherwise.
void PlaceSystemPrefix(const ChatFormat& f, const ChatMessage** msgs, size_t* n,
                       const char** prefix, size_t* prefix_at) {
  *prefix = nullptr;
  *prefix_at = 0;
  const bool system_first = *n > 0 && std::strcmp((*msgs)[0].role, "system") == 0;
  if (!system_first || (f.system != SystemMessageStyle::kFirstUserPrefix &&
                        f.system != SystemMessageStyle::kLastUserPrefix)) {
    return;
  }
  const char* text = (*msgs)[0].content;  // not trimmed: the templates do not trim it
  ++*msgs;
  --*n;
  if (f.system == SystemMessageStyle::kFirstUserPrefix) {
    *prefix = text;
  } else if (*n > 0 && std::strcmp((*msgs)[*n - 1].role, "user") == 0) {
    *prefix = text;
    *prefix_at = *n - 1;
  }
}

Status Finish(const BufferWriter& w, size_t* n_out) {
  if (w.overflow) {
    return Status::Error(StatusCode::kInvalidArgument, "chat output buffer is too small");
  }
  *n_out = w.n;
  return Status::Ok();
}

}  // namespace

Status ChatTemplate::Init(std::string_view jinja, std::string_view bos_text) {
  const ChatFormat* format = nullptr;
  ChatParams params;
  const Status s = RecogniseChatTemplate(jinja, &format, &params);
  if (!s.ok()) {
    Disable(s.message());
    return s;
  }
  format_ = format;
  params_ = std::move(params);
  bos_text_ = std::string(bos_text);
  return Status::Ok();
}

Status ChatTemplate::InitFormat(std::string_view name, std::string_view bos_text) {
  const ChatFormat* format = FindChatFormat(name);
  if (format == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "unknown chat format '%.*s': expected %s",
                         static_cast<int>(name.size() > 32 ? 32 : name.size()), name.data(),
                         ChatFormatNames());
  }
  format_ = format;
  params_ = DefaultChatParams(*format);
  bos_text_ = std::string(bos_text);
  return Status::Ok();
}

void ChatTemplate::Disable(const char* reason) {
  format_ = nullptr;
  params_ = ChatParams();
  std::snprintf(unavailable_, sizeof(unavailable_), "%s", reason);
}

Status ChatTemplate::Unavailable() const {
  return Status::Error(StatusCode::kInvalidState, "%s", unavailable_);
}

Status ChatTemplate::FormatChat(const ChatMessage* msgs, size_t n, bool add_generation_prompt,
                                char* out, size_t cap, size_t* n_out) const {
  *n_out = 0;
  if (format_ == nullptr) return Unavailable();
  STATICLM_RETURN_IF_ERROR(CheckMessages(msgs, n));
  // Mistral NeMo's template reads messages[0] unguarded: it fails on an empty conversation.
  if (n == 0 && format_->system == SystemMessageStyle::kLastUserPrefix) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "the chat template needs at least one message (chat format %s)",
                         format_->name);
  }
  BufferWriter w{out, cap};
  if (params_.starts_with_bos) w.Put(bos_text_);
  const bool system_first = n > 0 && std::strcmp(msgs[0].role, "system") == 0;
  const char* system_prefix = nullptr;
  size_t prefix_at = 0;
  PlaceSystemPrefix(*format_, &msgs, &n, &system_prefix, &prefix_at);
  if (n > 0 && params_.inserts_default_system && !system_first) {
    PutTurn(&w, *format_, params_, "system", nullptr, params_.default_system);
  }
  STATICLM_RETURN_IF_ERROR(PutTurns(&w, *format_, params_, msgs, n, system_prefix, prefix_at));
  w.Put(add_generation_prompt ? format_->generation_prompt : format_->end_without_prompt);
  return Finish(w, n_out);
}

Status ChatTemplate::FormatContinuation(const ChatMessage* msgs, size_t n,
                                        bool add_generation_prompt, char* out, size_t cap,
                                        size_t* n_out) const {
  *n_out = 0;
  if (format_ == nullptr) return Unavailable();
  STATICLM_RETURN_IF_ERROR(CheckMessages(msgs, n));
  BufferWriter w{out, cap};
  w.Put(format_->after_turn);  // what the template writes after the cached end-of-turn token
  STATICLM_RETURN_IF_ERROR(PutTurns(&w, *format_, params_, msgs, n, nullptr, 0));
  w.Put(add_generation_prompt ? format_->generation_prompt : format_->end_without_prompt);
  return Finish(w, n_out);
}

}  // namespace staticlm
