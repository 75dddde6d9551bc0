// staticlm serve: a local OpenAI-compatible HTTP server on fixed sessions (issue 18).
//
// Heap accounting: the sessions (contexts, buffers, worker threads) are made at init, then the
// count starts. Every thread of the HTTP layer (cpp-httplib's listener and thread pool, the
// JSON it parses and writes) runs inside a driver_scope, so its allocations are counted apart
// from staticlm's own: heap_allocs_after_init covers the session workers that format, tokenize
// and generate, and must stay 0; http_and_driver_heap_allocs_after_init is the HTTP layer's
// (plus a device driver's, on Vulkan).
#include <httplib.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "platform/alloc_counter.h"
#include "platform/driver_scope.h"
#include "tools/staticlm/commands.h"
#include "tools/staticlm/heap_counts.h"
#include "tools/staticlm/serve_json.h"
#include "tools/staticlm/serve_options.h"
#include "tools/staticlm/serve_pool.h"
#include "tools/staticlm/serve_request.h"
#include "tools/staticlm/sse_writer.h"

namespace staticlm::cli {
namespace {

constexpr const char* kJson = "application/json";

httplib::Server* g_server = nullptr;  // for the signal handler

void StopOnSignal(int) {
  if (g_server != nullptr) g_server->stop();
}

void SendError(httplib::Response& res, int status, const std::string& message, const char* type) {
  res.status = status;
  res.set_content(ErrorJson(message, type), kJson);
}

// The model's id: its file or folder name.
std::string ModelId(const char* path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

ResponseMeta MakeMeta(bool chat, const std::string& model) {
  static std::atomic<uint64_t> next_id{0};
  ResponseMeta meta;
  meta.chat = chat;
  meta.id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(++next_id);
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.model = model;
  return meta;
}

// What a session holds once a request is answered: the request's conversation and the answer.
std::string HeldKey(const ServeRequest& r, Session* s) {
  std::string answer(s->text(), s->text_bytes());
  return r.chat ? r.key + "assistant:" + answer + "\n" : r.key + answer;
}

class Server {
 public:
  Server(const ServeOptions& o, SessionPool* pool) : o_(o), pool_(pool), model_(ModelId(o.model)) {}

  void Register(httplib::Server& http) {
    http.Post("/v1/chat/completions",
              [this](const httplib::Request& q, httplib::Response& r) { Complete(q, r, true); });
    http.Post("/v1/completions",
              [this](const httplib::Request& q, httplib::Response& r) { Complete(q, r, false); });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& r) { Models(r); });
    http.Get("/health", [this](const httplib::Request&, httplib::Response& r) { Health(r); });
  }

 private:
  void Complete(const httplib::Request& req, httplib::Response& res, bool chat) {
    auto r = std::make_shared<ServeRequest>();
    std::string error = ParseServeRequest(req.body, chat, o_.max_tokens, r.get());
    if (!error.empty()) return SendError(res, 400, error, "invalid_request_error");
    Session* s = pool_->Acquire(r->key);
    if (s == nullptr) {
      res.set_header("Retry-After", "1");
      return SendError(
          res, 503,
          "all " + std::to_string(pool_->size()) + " sessions are busy (--sessions); retry later",
          "server_busy");
    }
    s->Submit(r->job);
    if (s->WaitAccepted() == JobPhase::kRejected) {
      std::string message = s->error();
      pool_->Release(s, "");
      return SendError(res, 400, message, "invalid_request_error");
    }
    ResponseMeta meta = MakeMeta(chat, model_);
    if (r->stream) return Stream(res, s, r, meta);
    s->WaitDone();
    JobResult result = s->result();
    std::string text(s->text(), s->text_bytes());
    std::string message = s->error();
    pool_->Release(s, HeldKey(*r, s));
    if (result.failed) return SendError(res, 500, message, "server_error");
    res.set_content(CompletionJson(meta, text, result), kJson);
  }

  void Stream(httplib::Response& res, Session* s, const std::shared_ptr<ServeRequest>& r,
              const ResponseMeta& meta) {
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [s, meta](size_t, httplib::DataSink& sink) { return WriteSseStream(s, meta, sink); },
        // Runs however the response ended (a client that went away too): the session is
        // given back only once its worker is done with it.
        [this, s, r](bool success) {
          if (!success) s->Cancel();
          s->WaitDone();
          pool_->Release(s, HeldKey(*r, s));
        });
  }

  void Models(httplib::Response& res) {
    res.set_content("{\"object\": \"list\", \"data\": [{\"id\": \"" + model_ +
                        "\", \"object\": \"model\", \"created\": 0, \"owned_by\": \"staticlm\"}]}",
                    kJson);
  }

  void Health(httplib::Response& res) {
    HeapCounts heap = ReadHeapCounts();
    res.set_content(
        "{\"status\": \"ok\", \"sessions\": " + std::to_string(pool_->size()) +
            ", \"busy\": " + std::to_string(pool_->busy()) +
            ", \"heap_allocs_after_init\": " + std::to_string(heap.own) +
            ", \"http_and_driver_heap_allocs_after_init\": " + std::to_string(heap.driver) + "}",
        kJson);
  }

  const ServeOptions& o_;
  SessionPool* pool_;
  std::string model_;
};

// Binds o.host:o.port (port 0: any free one). The bound port, or -1 after one line.
int Bind(httplib::Server& http, const ServeOptions& o) {
  int port = o.port == 0 ? http.bind_to_any_port(o.host)
                         : (http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) std::fprintf(stderr, "staticlm: cannot listen on %s:%d\n", o.host, o.port);
  return port;
}

}  // namespace

int ServeCommand(int argc, char** argv) {
  ServeOptions o;
  if (!ParseServeOptions(argc, argv, 2, &o)) return 2;
  SessionPool pool;
  if (!pool.Init(o.sessions, o.model, o.limits, o.chat_format, o.max_tokens)) return 1;
  httplib::Server http;
  // One thread per session plus a few for /health, /v1/models and the 503s.
  int threads = o.sessions + 4;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  Server server(o, &pool);
  server.Register(http);
  int port = Bind(http, o);
  if (port < 0) return 1;
  std::printf("staticlm serve: listening on http://%s:%d (%d sessions)\n", o.host, port,
              o.sessions);
  std::fflush(stdout);
  g_server = &http;
  std::signal(SIGINT, StopOnSignal);
  std::signal(SIGTERM, StopOnSignal);
  std::signal(SIGPIPE,
              SIG_IGN);  // a client that goes away mid-stream is a failed write, not an exit
  alloc_counter::Start();
  {
    driver_scope::Scope http_layer;  // the listener and every thread it starts count apart
    http.listen_after_bind();
  }
  alloc_counter::Stop();
  HeapCounts heap = ReadHeapCounts();
  std::fprintf(stderr,
               "[staticlm] serve stopped heap_allocs_after_init=%lld "
               "http_and_driver_heap_allocs_after_init=%lld\n",
               heap.own, heap.driver);
  g_server = nullptr;
  return 0;
}

}  // namespace staticlm::cli
