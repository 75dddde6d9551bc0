// The options of `staticlm serve`: where to listen, how many fixed sessions, and the limits
// each session's context is created with.
#pragma once

#include <cstdint>

#include "staticlm/staticlm.h"

namespace staticlm::cli {

struct ServeOptions {
  const char* model = nullptr;
  const char* host = "127.0.0.1";
  int32_t port = 8080;                // 0: any free port (the bound one is printed)
  int32_t sessions = 1;               // fixed sessions, each a context with its own KV cache
  int32_t max_tokens = 512;           // the most tokens one request may ask for
  const char* chat_format = nullptr;  // --chat-template NAME
  staticlm_limits limits;
};

// Fills `options` from argv[first..argc). False after printing a one-line error.
bool ParseServeOptions(int argc, char** argv, int first, ServeOptions* options);

}  // namespace staticlm::cli
