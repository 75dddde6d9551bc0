// Parsing of the OpenAI-compatible request bodies `staticlm serve` accepts
// (POST /v1/chat/completions and POST /v1/completions) into a ServeJob. Runs on an HTTP thread:
// it may allocate (its allocations are the HTTP layer's, counted apart).
#pragma once

#include <string>
#include <vector>

#include "tools/staticlm/serve_session.h"

namespace staticlm::cli {

struct ServeRequest {
  bool chat = false;
  bool stream = false;
  std::vector<std::string> roles;
  std::vector<std::string> contents;
  std::vector<staticlm_chat_message> messages;  // point into roles and contents
  std::string prompt;                           // completions
  std::string key;                              // the conversation's text (SessionPool)
  ServeJob job;                                 // points into the fields above
};

// Fills `request` from a JSON body. Returns an empty string, or the message of a 400 (malformed
// JSON, a missing or mistyped field, max_tokens over `max_tokens_cap`).
std::string ParseServeRequest(const std::string& body, bool chat, int32_t max_tokens_cap,
                              ServeRequest* request);

}  // namespace staticlm::cli
