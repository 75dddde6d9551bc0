#include "tests/support/family_golden.h"

#include <fstream>
#include <sstream>

namespace staticlm::test {
namespace {

// Texts are lowercase hex of their UTF-8 bytes; an absent field is the empty text.
bool DecodeHex(std::istringstream& in, std::string* out) {
  std::string hex;
  in >> hex;
  out->clear();
  if (hex.size() % 2 != 0) return false;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out->push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return true;
}

std::vector<int32_t> Ids(std::istringstream& in) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; in >> id;) ids.push_back(id);
  return ids;
}

// One line of a "greedy <variant> <name> chat <0|1>" block.
bool GreedyLine(const std::string& key, std::istringstream& in, GreedyCase* c) {
  if (key == "text") return DecodeHex(in, &c->text);
  if (key == "prompt_ids") {
    c->prompt_ids = Ids(in);
  } else if (key == "tokens") {
    c->tokens = Ids(in);
  } else if (key == "gaps") {
    for (float gap = 0; in >> gap;) c->gaps.push_back(gap);
  } else {
    return false;
  }
  return true;
}

bool ChatLine(const std::string& key, std::istringstream& in, FamilyChatCase* c) {
  if (key == "message") {
    std::pair<std::string, std::string> m;
    in >> m.first;
    c->messages.push_back(m);
    return DecodeHex(in, &c->messages.back().second);
  }
  if (key == "rendered") return DecodeHex(in, &c->rendered);
  if (key == "ids") {
    c->ids = Ids(in);
  } else if (key == "error") {
    c->raises = true;
  } else {
    return false;
  }
  return true;
}

// The file is a sequence of blocks; `current` says which kind the following lines belong to.
class Parser {
 public:
  explicit Parser(FamilyGolden* golden) : golden_(golden) {}

  bool Line(const std::string& key, std::istringstream& in) {
    if (key == "greedy") return StartGreedy(in);
    if (key == "tokenize") {
      current_ = Block::kTokenize;
      golden_->tokenize.emplace_back();
      return DecodeHex(in, &golden_->tokenize.back().text);
    }
    if (key == "chat") return StartChat(in);
    switch (current_) {
      case Block::kGreedy:
        return GreedyLine(key, in, greedy_);
      case Block::kTokenize:
        return TokenizeLine(key, in);
      case Block::kChat:
        return ChatLine(key, in, &golden_->chats.back());
      case Block::kNone:
        break;
    }
    return false;
  }

 private:
  enum class Block { kNone, kGreedy, kTokenize, kChat };

  bool StartGreedy(std::istringstream& in) {
    std::string variant, chat_word;
    int chat = 0;
    GreedyCase c;
    in >> variant >> c.name >> chat_word >> chat;
    c.chat = chat != 0;
    std::vector<GreedyCase>& cases = golden_->greedy[variant];
    cases.push_back(c);
    greedy_ = &cases.back();
    current_ = Block::kGreedy;
    return chat_word == "chat";
  }

  bool StartChat(std::istringstream& in) {
    FamilyChatCase c;
    std::string word;
    int gen = 0;
    in >> c.name >> word >> gen;
    c.add_generation_prompt = gen != 0;
    golden_->chats.push_back(c);
    current_ = Block::kChat;
    return word == "add_generation_prompt";
  }

  bool TokenizeLine(const std::string& key, std::istringstream& in) {
    if (key == "ids") {
      golden_->tokenize.back().ids = Ids(in);
    } else if (key == "ids_default") {
      golden_->tokenize.back().ids_default = Ids(in);
    } else {
      return false;
    }
    return true;
  }

  FamilyGolden* golden_;
  GreedyCase* greedy_ = nullptr;  // the last case of its variant's vector
  Block current_ = Block::kNone;
};

}  // namespace

bool ReadFamilyGolden(const std::string& path, FamilyGolden* golden, std::string* error) {
  std::ifstream file(path);
  if (!file) {
    *error = "cannot open " + path;
    return false;
  }
  Parser parser(golden);
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (!parser.Line(key, in)) {
      *error = path + ":" + std::to_string(number) + ": unexpected line: " + line.substr(0, 80);
      return false;
    }
  }
  if (golden->greedy.empty()) {
    *error = path + ": no greedy cases";
    return false;
  }
  return true;
}

}  // namespace staticlm::test
