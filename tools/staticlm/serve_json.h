// The OpenAI-compatible response bodies of `staticlm serve`: a whole completion, the chunks of
// a streamed one, and errors. HTTP-layer code: it allocates.
#pragma once

#include <cstdint>
#include <string>

#include "tools/staticlm/serve_session.h"

namespace staticlm::cli {

// What every response object of one request repeats.
struct ResponseMeta {
  bool chat = false;  // chat.completion(.chunk), else text_completion
  std::string id;
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// {"error": {"message", "type", "code"}}.
std::string ErrorJson(const std::string& message, const char* type);

// A whole completion: the text, finish_reason and usage.
std::string CompletionJson(const ResponseMeta& meta, const std::string& text,
                           const JobResult& result);

// One streamed chunk's JSON: `text` as the delta, and the finish_reason when `finish` is not
// null (else null). Chat chunks carry the assistant role when `first`.
std::string ChunkJson(const ResponseMeta& meta, const std::string& text, const char* finish,
                      bool first);

// "stop" when the model ended the answer, else "length".
const char* FinishReason(const JobResult& result);

}  // namespace staticlm::cli
