// libFuzzer target: the request bodies `staticlm serve` parses (tools/staticlm/serve_request.h).
// The first byte chooses the endpoint (even: /v1/completions, odd: /v1/chat/completions) and
// the server's --max-tokens cap; the rest is the body. Any body must give either a request or a
// one-line 400 message, never an exception (nlohmann's readers throw on mistyped fields, which
// the HTTP layer would turn into a bare 500); a request must hold what the generation reads:
// max_tokens within the cap, a chat's messages pointing at its own roles and contents.
// A body that parses is also tried with each of its values replaced by one of every other JSON
// type (json_type_swaps.h), the way a client gets a field's type wrong. The dictionary
// tests/fuzz/dict/serve_request_fuzz.dict holds the bodies' tokens.
// Seeds: OpenAI-style bodies of both endpoints, with every sampling field, and their prefixes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/fuzz/json_type_swaps.h"
#include "tools/staticlm/serve_request.h"

namespace {

using staticlm::cli::ServeRequest;

void Fail(const char* what) {
  std::fprintf(stderr, "serve_request_fuzz: %s\n", what);
  std::abort();
}

void CheckRequest(const ServeRequest& r, bool chat, int32_t cap) {
  if (r.job.max_tokens < 1 || r.job.max_tokens > cap) Fail("max_tokens outside [1, cap]");
  if (!chat) {
    if (r.job.prompt != r.prompt.data() || r.job.prompt_bytes != r.prompt.size())
      Fail("the job's prompt is not the request's");
    return;
  }
  if (r.job.n_messages == 0 || r.job.n_messages != r.roles.size() ||
      r.job.messages != r.messages.data()) {
    Fail("the job's messages are not the request's");
  }
  for (size_t i = 0; i < r.roles.size(); ++i) {
    if (r.messages[i].role != r.roles[i].c_str() || r.messages[i].content != r.contents[i].c_str())
      Fail("a message does not point at its role and content");
  }
}

void ParseAndCheck(const std::string& body, bool chat, int32_t cap) {
  ServeRequest request;
  const std::string error = staticlm::cli::ParseServeRequest(body, chat, cap, &request);
  if (!error.empty()) {
    if (error.find('\n') != std::string::npos) Fail("a 400 message spans lines");
    return;
  }
  CheckRequest(request, chat, cap);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const int32_t cap = 1 + (data[0] >> 1);  // 1 … 128
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  ParseAndCheck(body, chat, cap);
  staticlm::fuzz::ForEachTypeSwap(
      body, /*max_values=*/64, /*max_depth=*/6,
      [&](const std::string& swapped) { ParseAndCheck(swapped, chat, cap); });
  return 0;
}
