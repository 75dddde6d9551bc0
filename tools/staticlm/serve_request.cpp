#include "tools/staticlm/serve_request.h"

#include <nlohmann/json.hpp>

namespace staticlm::cli {
namespace {

using nlohmann::json;

constexpr int32_t kDefaultMaxTokens = 128;  // the CLI's --max-tokens default

// Whether object `o` has a string member `name`. Every field is checked this way before it is
// read: nlohmann's readers (get, value) throw on a mistyped field, and a request must get a 400
// naming the field, not the HTTP layer's 500.
bool HasString(const json& o, const char* name) {
  return o.contains(name) && o[name].is_string();
}

// A message's content: a string, or OpenAI's list of parts whose "text" parts are joined.
bool ContentText(const json& content, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return true;
  }
  if (!content.is_array()) return false;
  for (const json& part : content) {
    if (!part.is_object() || !HasString(part, "type") || part["type"] != "text" ||
        !HasString(part, "text")) {
      return false;
    }
    *out += part["text"].get<std::string>();
  }
  return true;
}

std::string ParseMessages(const json& body, ServeRequest* r) {
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    return "\"messages\" must be a non-empty array";
  for (const json& m : body["messages"]) {
    if (!m.is_object() || !HasString(m, "role")) return "each message needs a string \"role\"";
    std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant")
      return "a message's \"role\" must be system, user or assistant";
    std::string text;
    if (!m.contains("content") || !ContentText(m["content"], &text))
      return "each message needs a \"content\" string (or a list of text parts)";
    r->key += role + ":" + text + "\n";
    r->roles.push_back(std::move(role));
    r->contents.push_back(std::move(text));
  }
  for (size_t i = 0; i < r->roles.size(); ++i)
    r->messages.push_back({r->roles[i].c_str(), r->contents[i].c_str()});
  r->job.messages = r->messages.data();
  r->job.n_messages = r->messages.size();
  return "";
}

std::string ParsePrompt(const json& body, ServeRequest* r) {
  if (!HasString(body, "prompt")) return "\"prompt\" must be a string";
  r->prompt = body["prompt"].get<std::string>();
  r->key = r->prompt;
  r->job.prompt = r->prompt.data();
  r->job.prompt_bytes = r->prompt.size();
  return "";
}

// A number field into *out when present; false when present but not a number in [lo, hi].
template <typename T>
bool NumberField(const json& body, const char* name, double lo, double hi, T* out) {
  if (!body.contains(name) || body[name].is_null()) return true;
  if (!body[name].is_number()) return false;
  double v = body[name].get<double>();
  if (!(v >= lo && v <= hi)) return false;
  *out = static_cast<T>(v);
  return true;
}

std::string ParseSampling(const json& body, int32_t max_tokens_cap, ServeRequest* r) {
  ServeJob& j = r->job;
  staticlm_sampler_default(&j.sampler);
  j.max_tokens = kDefaultMaxTokens < max_tokens_cap ? kDefaultMaxTokens : max_tokens_cap;
  if (!NumberField(body, "max_tokens", 1, max_tokens_cap, &j.max_tokens) ||
      !NumberField(body, "max_completion_tokens", 1, max_tokens_cap, &j.max_tokens)) {
    return "\"max_tokens\" must be between 1 and " + std::to_string(max_tokens_cap) +
           " (the server's --max-tokens)";
  }
  if (!NumberField(body, "temperature", 0, 100, &j.sampler.temperature) ||
      !NumberField(body, "top_p", 0, 1, &j.sampler.top_p) ||
      !NumberField(body, "min_p", 0, 1, &j.sampler.min_p) ||
      !NumberField(body, "top_k", 0, 1 << 30, &j.sampler.top_k) ||
      !NumberField(body, "seed", 0, 9007199254740991.0, &j.seed)) {
    return "temperature, top_p, min_p, top_k and seed must be numbers in range";
  }
  if (body.contains("stream") && !body["stream"].is_boolean())
    return "\"stream\" must be a boolean";
  r->stream = body.value("stream", false);
  return "";
}

}  // namespace

std::string ParseServeRequest(const std::string& body, bool chat, int32_t max_tokens_cap,
                              ServeRequest* r) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return "the body is not valid JSON";
  if (!parsed.is_object()) return "the body must be a JSON object";
  r->chat = chat;
  std::string error = chat ? ParseMessages(parsed, r) : ParsePrompt(parsed, r);
  if (error.empty()) error = ParseSampling(parsed, max_tokens_cap, r);
  return error;
}

}  // namespace staticlm::cli
