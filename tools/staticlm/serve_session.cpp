#include "tools/staticlm/serve_session.h"

#include <cstdio>
#include <cstring>

#include "tools/staticlm/generation.h"

namespace staticlm::cli {

bool Session::Init(const char* model, const staticlm_limits& limits, const char* chat_format,
                   int32_t max_tokens, char* error, size_t capacity) {
  if (staticlm_create(model, &limits, &ctx_, error, capacity) != STATICLM_OK) return false;
  // A model without a usable template still serves /v1/completions; chat requests then get
  // format_chat's one-line message as a 400.
  if (chat_format != nullptr && staticlm_set_chat_format(ctx_, chat_format) != STATICLM_OK) {
    std::snprintf(error, capacity, "%s", staticlm_last_error(ctx_));
    return false;
  }
  max_context_ = limits.max_context;
  prompt_capacity_ = static_cast<size_t>(limits.max_prompt_bytes);
  // staticlm_token_to_text writes at most 256 bytes a token here (generation.cpp's buffer).
  text_capacity_ = static_cast<size_t>(max_tokens) * 256 + 256;
  prompt_text_.reset(new char[prompt_capacity_]);
  prompt_tokens_.reset(new int32_t[prompt_capacity_ + 1]);
  generated_.reset(new int32_t[max_tokens]);
  text_.reset(new char[text_capacity_]);
  return true;
}

void Session::StartWorker() {
  worker_ = std::thread([this] { WorkerLoop(); });
}

void Session::StopWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Session::~Session() {
  StopWorker();
  staticlm_destroy(ctx_);
}

void Session::Submit(const ServeJob& job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    phase_ = JobPhase::kQueued;
    text_bytes_ = 0;
    cancel_.store(false);
    result_ = JobResult{};
    error_[0] = '\0';
  }
  changed_.notify_all();
}

JobPhase Session::WaitAccepted() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return phase_ != JobPhase::kQueued; });
  return phase_;
}

size_t Session::WaitText(size_t offset, bool* done) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return text_bytes_ > offset || phase_ != JobPhase::kRunning; });
  *done = phase_ != JobPhase::kRunning;
  return text_bytes_;
}

void Session::WaitDone() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock,
                [this] { return phase_ == JobPhase::kDone || phase_ == JobPhase::kRejected; });
}

size_t Session::text_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return text_bytes_;
}

void Session::WorkerLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || phase_ == JobPhase::kQueued; });
      if (stopping_) return;
    }
    RunJob();
  }
}

void Session::Reject(const char* message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::snprintf(error_, sizeof(error_), "%s", message);
    phase_ = JobPhase::kRejected;
  }
  changed_.notify_all();
}

// Renders and tokenizes the job's prompt into prompt_tokens_. False after Reject.
bool Session::PreparePrompt(size_t* n_prompt) {
  size_t text_bytes = job_.prompt_bytes;
  const char* text = job_.prompt;
  if (job_.messages != nullptr) {
    if (staticlm_format_chat(ctx_, job_.messages, job_.n_messages, 1, 0, prompt_text_.get(),
                             prompt_capacity_, &text_bytes) != STATICLM_OK) {
      Reject(staticlm_last_error(ctx_));
      return false;
    }
    text = prompt_text_.get();
  }
  if (staticlm_tokenize(ctx_, text, text_bytes, 1, prompt_tokens_.get(), prompt_capacity_ + 1,
                        n_prompt) != STATICLM_OK) {
    Reject(staticlm_last_error(ctx_));
    return false;
  }
  if (*n_prompt == 0) {
    Reject("the prompt is empty");
    return false;
  }
  if (*n_prompt >= static_cast<size_t>(max_context_)) {
    char message[160];
    std::snprintf(message, sizeof(message),
                  "the prompt is %zu tokens; the context holds %d (prompt and answer: start the "
                  "server with a larger --ctx)",
                  *n_prompt, max_context_);
    Reject(message);
    return false;
  }
  return true;
}

// How many leading prompt tokens the cache already holds: all of the history when it is a
// proper prefix of the prompt, else none (and the conversation is forgotten).
static size_t ReusablePrefix(staticlm_context* ctx, const int32_t* prompt, size_t n_prompt) {
  size_t n_history = 0;
  const int32_t* history = staticlm_history(ctx, &n_history);
  bool prefix = n_history > 0 && n_history < n_prompt &&
                n_history == static_cast<size_t>(staticlm_position(ctx)) &&
                std::memcmp(history, prompt, n_history * sizeof(int32_t)) == 0;
  if (prefix) return n_history;
  staticlm_reset(ctx);
  return 0;
}

void Session::AppendText(void* self, const char* text, size_t bytes) {
  auto* s = static_cast<Session*>(self);
  {
    std::lock_guard<std::mutex> lock(s->mutex_);
    size_t room = s->text_capacity_ - s->text_bytes_;
    size_t n = bytes < room ? bytes : room;
    std::memcpy(s->text_.get() + s->text_bytes_, text, n);
    s->text_bytes_ += n;
  }
  s->changed_.notify_all();
}

void Session::RunJob() {
  size_t n_prompt = 0;
  if (!PreparePrompt(&n_prompt)) return;
  size_t reused = ReusablePrefix(ctx_, prompt_tokens_.get(), n_prompt);
  staticlm_seed(ctx_, job_.seed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = JobPhase::kRunning;
  }
  changed_.notify_all();
  GenerationStats stats;
  staticlm_status s =
      Generate(ctx_, prompt_tokens_.get() + reused, n_prompt - reused, job_.sampler,
               job_.max_tokens, generated_.get(), TextOutput{AppendText, this, &cancel_}, &stats);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    result_.prompt_tokens = n_prompt;
    result_.reused_tokens = reused;
    result_.completion_tokens = stats.generated_tokens;
    result_.stopped = stats.ended;
    result_.failed = s != STATICLM_OK;
    if (result_.failed) {
      std::snprintf(error_, sizeof(error_), "%s", staticlm_last_error(ctx_));
      staticlm_reset(ctx_);  // a failed step leaves no conversation to continue
    }
    phase_ = JobPhase::kDone;
  }
  changed_.notify_all();
}

}  // namespace staticlm::cli
