// Server-sent events for a streamed completion: one `data: {chunk}` event per batch of new
// text as the session's worker generates it, a last chunk with the finish_reason, then
// `data: [DONE]`, as OpenAI's streaming API does.
#pragma once

#include <httplib.h>

#include "tools/staticlm/serve_json.h"
#include "tools/staticlm/serve_session.h"

namespace staticlm::cli {

// Writes the events of the running job of `session` to `sink` until the job is done. Returns
// false when the client went away (the job still runs to its end; the caller waits for it).
bool WriteSseStream(Session* session, const ResponseMeta& meta, httplib::DataSink& sink);

}  // namespace staticlm::cli
