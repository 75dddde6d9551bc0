// Recognising ChatML-shaped Jinja chat templates (see chat_template.h). Init only.
#pragma once

#include <string>
#include <string_view>

#include "platform/status.h"

namespace staticlm::text {

// Rewrites a Jinja template into a canonical form: tag contents without whitespace or trim
// markers, string literals unescaped in single quotes, adjacent literals joined, and
// message.role / message.content spelled with subscripts. Text between tags is dropped when
// Jinja would not print it (trim markers, or trim_blocks/lstrip_blocks as Hugging Face
// renders templates); any other text between tags is kUnsupported. Allocates.
Status CanonicalizeJinja(std::string_view jinja, std::string* canonical);

// Recognises a ChatML template and extracts its default system message, if any.
// kUnsupported for any other template.
Status MatchChatMl(std::string_view jinja, bool* inserts_default_system,
                   std::string* default_system);

}  // namespace staticlm::text
