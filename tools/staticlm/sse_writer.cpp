#include "tools/staticlm/sse_writer.h"

#include <string>

namespace staticlm::cli {
namespace {

bool WriteEvent(httplib::DataSink& sink, const std::string& data) {
  std::string event = "data: " + data + "\n\n";
  return sink.write(event.data(), event.size());
}

}  // namespace

bool WriteSseStream(Session* session, const ResponseMeta& meta, httplib::DataSink& sink) {
  size_t sent = 0;
  bool first = true;
  for (bool done = false; !done;) {
    size_t length = session->WaitText(sent, &done);
    if (length == sent && !(first && meta.chat)) continue;
    std::string delta(session->text() + sent, length - sent);
    sent = length;
    if (!WriteEvent(sink, ChunkJson(meta, delta, nullptr, first))) return false;
    first = false;
  }
  JobResult result = session->result();
  if (result.failed) {
    // Headers are gone already: report the failure as an error event, as OpenAI does.
    WriteEvent(sink, ErrorJson(session->error(), "server_error"));
  } else if (!WriteEvent(sink, ChunkJson(meta, "", FinishReason(result), false))) {
    return false;
  }
  bool ok = WriteEvent(sink, "[DONE]");
  sink.done();
  return ok;
}

}  // namespace staticlm::cli
