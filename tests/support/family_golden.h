// Reader of the model-family golden files tests/golden/families/<family>.txt, written by
// tests/reference/make_family_models.py from transformers (format: tests/reference/README.md):
// greedy continuations per weight variant ("hf": the Hugging Face folder's weights; "f16" and
// "q8_0": the weights as the GGUF of that type holds them), tokenizations of tricky texts and
// chat-template renderings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/golden_files.h"

namespace staticlm::test {

struct FamilyTokenizeCase {
  std::string text;
  std::vector<int32_t> ids;          // special-token text parsed as special, nothing added
  std::vector<int32_t> ids_default;  // the tokenizer's default (BOS where the family adds one)
};

struct FamilyChatCase {
  std::string name;
  bool add_generation_prompt = false;
  std::vector<std::pair<std::string, std::string>> messages;  // (role, content)
  bool raises = false;       // the template refused the conversation (no rendering)
  std::string rendered;      // apply_chat_template's text
  std::vector<int32_t> ids;  // the rendering tokenized, nothing added
};

struct FamilyGolden {
  std::map<std::string, std::vector<GreedyCase>> greedy;  // by variant: hf, f16, q8_0
  std::vector<FamilyTokenizeCase> tokenize;
  std::vector<FamilyChatCase> chats;
};

// False (with a message in *error) when the file is missing or has a line it does not know.
bool ReadFamilyGolden(const std::string& path, FamilyGolden* golden, std::string* error);

}  // namespace staticlm::test
