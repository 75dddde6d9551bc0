// One fixed session of `staticlm serve`: a context (its own KV cache), a worker thread and
// every buffer a request needs, all made at init. An HTTP thread hands the session a job and
// reads the text back; the worker formats, tokenizes and generates with the C API only, so the
// generation path allocates nothing (the HTTP threads' allocations are counted apart: see
// cmd_serve.cpp).
//
// Prefix reuse: when the session's token history is a prefix of the new prompt (the next turn
// of the conversation it last served), only the new tokens are prefilled.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

// What a request asks for. The pointers are borrowed until Session::WaitAccepted returns.
struct ServeJob {
  const staticlm_chat_message* messages = nullptr;  // chat; null for a plain completion
  size_t n_messages = 0;
  const char* prompt = nullptr;  // completion: the prompt text, used as it is
  size_t prompt_bytes = 0;
  staticlm_sampler sampler{};
  uint64_t seed = 0;
  int32_t max_tokens = 0;
};

enum class JobPhase { kIdle, kQueued, kRunning, kRejected, kDone };

// What the HTTP side reads back once the job is done.
struct JobResult {
  size_t prompt_tokens = 0;
  size_t completion_tokens = 0;
  size_t reused_tokens = 0;  // prompt tokens already in the cache (prefix reuse)
  bool stopped = false;      // ended on an end-of-generation token ("stop", else "length")
  bool failed = false;       // the engine failed mid-generation (error() says why)
};

class Session {
 public:
  // Init: creates the context and the buffers; false with `error` filled.
  bool Init(const char* model, const staticlm_limits& limits, const char* chat_format,
            int32_t max_tokens, char* error, size_t capacity);
  void StartWorker();
  void StopWorker();
  ~Session();

  // HTTP side. Submit starts a job; WaitAccepted blocks until the prompt was accepted
  // (kRunning or kDone) or rejected (kRejected: error() is the 400 message).
  void Submit(const ServeJob& job);
  JobPhase WaitAccepted();
  // Blocks until the text grows past `offset` or the job is done; returns the text length and
  // sets `*done`. text()[0 .. length) does not change until the next Submit.
  size_t WaitText(size_t offset, bool* done);
  void WaitDone();
  // Asks the running job to stop before its next token (its client went away).
  void Cancel() { cancel_.store(true); }
  const char* text() const { return text_.get(); }
  size_t text_bytes();
  const char* error() const { return error_; }
  JobResult result() const { return result_; }
  int32_t max_context() const { return max_context_; }

 private:
  void WorkerLoop();
  void RunJob();
  bool PreparePrompt(size_t* n_prompt);
  void Reject(const char* message);
  static void AppendText(void* self, const char* text, size_t bytes);

  staticlm_context* ctx_ = nullptr;
  int32_t max_context_ = 0;
  size_t prompt_capacity_ = 0;
  size_t text_capacity_ = 0;
  std::unique_ptr<char[]> prompt_text_;
  std::unique_ptr<int32_t[]> prompt_tokens_;
  std::unique_ptr<int32_t[]> generated_;
  std::unique_ptr<char[]> text_;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread worker_;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};
  JobPhase phase_ = JobPhase::kIdle;
  ServeJob job_;
  size_t text_bytes_ = 0;
  JobResult result_;
  char error_[512] = {};
};

}  // namespace staticlm::cli
