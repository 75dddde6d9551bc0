#include "runtime/tokenizer/chat_template.h"

#include <cstring>

#include "runtime/tokenizer/chat_template_match.h"

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

constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>";
constexpr std::string_view kGenerationPrompt = "<|im_start|>assistant\n";

void PutMessage(BufferWriter* w, std::string_view role, std::string_view content) {
  w->Put(kImStart);
  w->Put(role);
  w->Put("\n");
  w->Put(content);
  w->Put(kImEnd);
  w->Put("\n");
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

Status Finish(const BufferWriter& w, size_t* n_out) {
  if (w.overflow) {
    return Status::Error(StatusCode::kInvalidArgument, "chat output buffer is too small");
  }
  *n_out = w.n;
  return Status::Ok();
}

}  // namespace

Status ChatTemplate::Init(std::string_view jinja_template) {
  initialized_ = false;
  STATICLM_RETURN_IF_ERROR(
      text::MatchChatMl(jinja_template, &inserts_default_system_, &default_system_));
  initialized_ = true;
  return Status::Ok();
}

Status ChatTemplate::FormatChat(const ChatMessage* msgs, size_t n, bool add_generation_prompt,
                                char* out, size_t cap, size_t* n_out) const {
  *n_out = 0;
  if (!initialized_)
    return Status::Error(StatusCode::kInvalidState,
                         "the model has no chat template (tokenizer.chat_template)");
  STATICLM_RETURN_IF_ERROR(CheckMessages(msgs, n));
  BufferWriter w{out, cap};
  if (n > 0 && inserts_default_system_ && std::strcmp(msgs[0].role, "system") != 0) {
    PutMessage(&w, "system", default_system_);
  }
  for (size_t i = 0; i < n; ++i) PutMessage(&w, msgs[i].role, msgs[i].content);
  if (add_generation_prompt) w.Put(kGenerationPrompt);
  return Finish(w, n_out);
}

Status ChatTemplate::FormatContinuation(const ChatMessage* msgs, size_t n,
                                        bool add_generation_prompt, char* out, size_t cap,
                                        size_t* n_out) const {
  *n_out = 0;
  if (!initialized_)
    return Status::Error(StatusCode::kInvalidState,
                         "the model has no chat template (tokenizer.chat_template)");
  STATICLM_RETURN_IF_ERROR(CheckMessages(msgs, n));
  BufferWriter w{out, cap};
  w.Put("\n");  // the template's newline after the previous reply's <|im_end|>
  for (size_t i = 0; i < n; ++i) PutMessage(&w, msgs[i].role, msgs[i].content);
  if (add_generation_prompt) w.Put(kGenerationPrompt);
  return Finish(w, n_out);
}

}  // namespace staticlm
