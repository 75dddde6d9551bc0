// The fixed sessions of `staticlm serve`. A request takes a free session or gets none (the
// server answers 503): nothing is created after init. Among free sessions it prefers the one
// whose last conversation its own continues (so the prompt's prefix is already in that
// session's cache), else the one idle longest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tools/staticlm/serve_session.h"

namespace staticlm::cli {

class SessionPool {
 public:
  // Init: `n` sessions, each with its context and worker thread. False after one line on
  // stderr.
  bool Init(int32_t n, const char* model, const staticlm_limits& limits, const char* chat_format,
            int32_t max_tokens);
  // A free session, or null when all are busy. `key` identifies the conversation (its
  // messages' text); the session that served a conversation `key` continues is preferred.
  Session* Acquire(const std::string& key);
  // Gives `session` back; `key` is the conversation it now holds (the request's key followed
  // by the answer).
  void Release(Session* session, std::string key);
  int32_t size() const { return static_cast<int32_t>(slots_.size()); }
  int32_t busy();

 private:
  struct Slot {
    std::unique_ptr<Session> session;
    bool busy = false;
    uint64_t last_used = 0;
    std::string key;
  };
  std::mutex mutex_;
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
};

}  // namespace staticlm::cli
