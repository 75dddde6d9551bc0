// Chat formats as data: one row per family of chat templates. A row says how a conversation
// is laid out (turn markers, the assistant's role name, the generation prompt, where a system
// message goes, the end-of-turn token) and how to recognise the family's Jinja templates
// (tokenizer.chat_template). ChatTemplate (chat_template.h) formats with a row and the
// parameters its recogniser extracted; adding a family is a row here and a recogniser.
//
//   chatml  <|im_start|>ROLE\nCONTENT<|im_end|>\n …, prompt <|im_start|>assistant\n
//           (SmolLM2, Qwen2.5, Qwen3). A system message is a turn of its own; some templates
//           insert a default one when the conversation does not start with one (SmolLM2,
//           Qwen2.5); Qwen3's rewrites the <think> blocks of assistant turns.
//   gemma   <start_of_turn>ROLE\nCONTENT<end_of_turn>\n …, the assistant's role written
//           "model", prompt <start_of_turn>model\n (Gemma 2 and 3). No system role: a leading
//           system message's text and "\n\n" open the first user turn. Roles must alternate
//           user, assistant, user, … (the template raises otherwise); content is trimmed as
//           Jinja's `trim` does (Python's str.strip). The template starts with {{ bos_token }}.
//   llama3  <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> …, prompt
//           <|start_header_id|>assistant<|end_header_id|>\n\n (Llama 3.x Instruct). Starts with
//           {{ bos_token }}; content is trimmed. Llama 3.1+ templates always open with a system
//           turn whose text starts with a preamble ("Cutting Knowledge Date: …\nToday Date: …");
//           Llama 3.0's has no such turn.
//   phi3    <|ROLE|>\nCONTENT<|end|>\n …, prompt <|assistant|>\n (Phi-3 / Phi-3.5 mini). A system
//           message with empty content is left out; without the generation prompt the
//           conversation ends with the EOS token's text <|endoftext|>.
//   mistral [INST] USER [/INST]ASSISTANT</s> … (Mistral 7B Instruct v0.1 / v0.2). No system
//           role (the template raises), roles alternate, starts with {{ bos_token }}, no prompt
//           after the last [/INST].
//   mistral-nemo  [INST]USER[/INST]ASSISTANT</s> … with no spaces (Mistral NeMo Instruct 2407,
//           Mistral's "v3-tekken" layout). A leading system message's text and "\n\n" open the
//           LAST message when that is a user message (the template's loop.last) and are left
//           out otherwise; roles alternate, only user and assistant after the system message,
//           an empty conversation raises; starts with {{ bos_token }}, no prompt after [/INST].
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace staticlm {

enum class SystemMessageStyle : uint8_t {
  kOwnTurn,          // a turn like any other
  kFirstUserPrefix,  // its text and a separator open the first user turn
  kNone,             // the template refuses a system message
  kLastUserPrefix,   // its text and a separator open the last message if that is a user's
};

// What one template of a family fixes that the row does not. Init only; allocates.
struct ChatParams {
  bool starts_with_bos = false;  // the template opens with {{ bos_token }}
  bool alternates = false;       // roles must alternate user, assistant, …
  bool trims_content = false;    // each message's content is trimmed
  // kOwnTurn: a system turn inserted when the conversation does not start with one.
  bool inserts_default_system = false;
  std::string default_system;
  // kFirstUserPrefix / kLastUserPrefix: what follows the system text, before the user
  // message's text.
  std::string system_separator;
  // kOwnTurn: text opening every system turn's content (Llama 3.1+'s knowledge and today's
  // date lines).
  std::string system_preamble;
  bool skips_empty_system = false;  // a system message with empty content is left out
  // Qwen3: assistant turns before the last user message lose their <think> block; later ones
  // are written with it normalised (chat_thinking.h).
  bool rewrites_thinking = false;
};

struct ChatFormat {
  const char* name;                 // what --chat-template and staticlm_set_chat_format take
  std::string_view turn_start;      // before the role
  std::string_view assistant_role;  // how the role "assistant" is written
  std::string_view role_end;        // between the role and the content
  // The text of the token closing a turn (generation stops there); a literal, so data() is
  // NUL-terminated (staticlm_chat_format hands it out as a C string).
  std::string_view end_of_turn;
  std::string_view after_turn;         // the text the template puts after end_of_turn
  std::string_view generation_prompt;  // opens the assistant's turn
  // When not empty, a user turn is user_turn_start + CONTENT + user_turn_end instead of the
  // turn_start / role / end_of_turn layout (Mistral's [INST] … [/INST]).
  std::string_view user_turn_start;
  std::string_view user_turn_end;
  // Written after the last turn when there is no generation prompt (Phi-3's EOS text).
  std::string_view end_without_prompt;
  SystemMessageStyle system;
  // The family's reference template, used when a format is forced on a model.
  bool starts_with_bos;
  bool alternates;
  bool trims_content;
  std::string_view system_separator;
  std::string_view system_preamble;  // ChatParams::system_preamble of the reference template
  bool always_system;                // a system turn even without a system message (Llama 3.1+)
  bool skips_empty_system;
  // general.architecture values whose instruct models use this format, ", "-separated: only to
  // name the format when a file has no template (SmolLM2 is "llama", which has no one format).
  const char* families;
  // Recognises the canonical form (text::CanonicalizeJinja) of this family's Jinja templates
  // and extracts their parameters; kUnsupported (with the reason) for any other template.
  // Allocates.
  Status (*match)(std::string_view canonical, ChatParams* params);
};

// The row named `name`, or nullptr.
const ChatFormat* FindChatFormat(std::string_view name);

// The row whose families include `architecture`, or nullptr.
const ChatFormat* ChatFormatOfFamily(std::string_view architecture);

// The names of every row, for messages: "chatml, gemma, llama3, phi3, mistral, mistral-nemo".
const char* ChatFormatNames();

// The parameters of `format`'s reference template (a forced format).
ChatParams DefaultChatParams(const ChatFormat& format);

// Tries every row's recogniser on `jinja`. kUnsupported when none recognises it.
Status RecogniseChatTemplate(std::string_view jinja, const ChatFormat** format, ChatParams* params);

}  // namespace staticlm
