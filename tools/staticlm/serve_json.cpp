#include "tools/staticlm/serve_json.h"

#include <nlohmann/json.hpp>

namespace staticlm::cli {
namespace {

using nlohmann::json;

// Text out of the engine is valid UTF-8 (whole characters, U+FFFD for a broken tail); replace
// rather than throw should that ever not hold.
std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json Envelope(const ResponseMeta& meta, bool chunk) {
  const char* object =
      meta.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return json{
      {"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

}  // namespace

const char* FinishReason(const JobResult& result) {
  return result.stopped ? "stop" : "length";
}

std::string ErrorJson(const std::string& message, const char* type) {
  return Dump(json{{"error", {{"message", message}, {"type", type}, {"code", nullptr}}}});
}

std::string CompletionJson(const ResponseMeta& meta, const std::string& text,
                           const JobResult& result) {
  json choice = {{"index", 0}, {"finish_reason", FinishReason(result)}};
  if (meta.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  json body = Envelope(meta, false);
  body["choices"] = json::array({choice});
  body["usage"] = {{"prompt_tokens", result.prompt_tokens},
                   {"completion_tokens", result.completion_tokens},
                   {"total_tokens", result.prompt_tokens + result.completion_tokens},
                   {"prompt_tokens_details", {{"cached_tokens", result.reused_tokens}}}};
  return Dump(body);
}

std::string ChunkJson(const ResponseMeta& meta, const std::string& text, const char* finish,
                      bool first) {
  json choice = {{"index", 0}};
  choice["finish_reason"] = finish != nullptr ? json(finish) : json(nullptr);
  if (meta.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || first) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  json body = Envelope(meta, true);
  body["choices"] = json::array({choice});
  return Dump(body);
}

}  // namespace staticlm::cli
