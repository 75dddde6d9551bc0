#include "tools/staticlm/serve_pool.h"

#include <cstdio>

namespace staticlm::cli {

bool SessionPool::Init(int32_t n, const char* model, const staticlm_limits& limits,
                       const char* chat_format, int32_t max_tokens) {
  slots_.resize(static_cast<size_t>(n));
  for (Slot& slot : slots_) {
    slot.session.reset(new Session);
    char error[512];
    if (!slot.session->Init(model, limits, chat_format, max_tokens, error, sizeof(error))) {
      std::fprintf(stderr, "staticlm: %s\n", error);
      return false;
    }
    slot.session->StartWorker();
  }
  return true;
}

Session* SessionPool::Acquire(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot* best = nullptr;
  for (Slot& slot : slots_) {
    if (slot.busy) continue;
    bool continues = !slot.key.empty() && key.compare(0, slot.key.size(), slot.key) == 0;
    bool best_continues =
        best != nullptr && !best->key.empty() && key.compare(0, best->key.size(), best->key) == 0;
    if (best == nullptr || (continues && !best_continues) ||
        (continues == best_continues && slot.last_used < best->last_used)) {
      best = &slot;
    }
  }
  if (best == nullptr) return nullptr;
  best->busy = true;
  return best->session.get();
}

void SessionPool::Release(Session* session, std::string key) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Slot& slot : slots_) {
    if (slot.session.get() != session) continue;
    slot.busy = false;
    slot.last_used = ++clock_;
    slot.key = std::move(key);
  }
}

int32_t SessionPool::busy() {
  std::lock_guard<std::mutex> lock(mutex_);
  int32_t n = 0;
  for (const Slot& slot : slots_) n += slot.busy ? 1 : 0;
  return n;
}

}  // namespace staticlm::cli
