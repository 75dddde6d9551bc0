#include "tests/support/golden_files.h"

#include <fstream>
#include <sstream>

namespace staticlm::test {
namespace {

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

template <typename T>
std::vector<T> ReadNumbers(std::istringstream& in) {
  std::vector<T> values;
  T v;
  while (in >> v) values.push_back(v);
  return values;
}

// Calls `line_fn(keyword, rest_of_line_stream)` for every non-comment line.
template <typename Fn>
bool ForEachLine(const std::string& path, std::string* error, Fn line_fn) {
  std::ifstream file(path);
  if (!file) {
    *error = "cannot open " + path;
    return false;
  }
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string keyword;
    in >> keyword;
    if (!line_fn(keyword, in)) {
      *error = path + ": unexpected line: " + line.substr(0, 80);
      return false;
    }
  }
  return true;
}

}  // namespace

bool ReadTokenizerGolden(const std::string& path, std::vector<TokenizerCase>* cases,
                         std::string* error) {
  return ForEachLine(path, error, [&](const std::string& keyword, std::istringstream& in) {
    if (keyword == "text") {
      std::string hex;
      in >> hex;
      TokenizerCase c;
      c.text = FromHex(hex);
      cases->push_back(c);
      return true;
    }
    if (keyword == "ids" && !cases->empty()) {
      cases->back().ids = ReadNumbers<int32_t>(in);
      return true;
    }
    if (keyword == "decoded" && !cases->empty()) {
      std::string hex;
      in >> hex;
      cases->back().has_decoded = true;
      cases->back().decoded = FromHex(hex);
      return true;
    }
    return false;
  });
}

bool ReadLogitsGolden(const std::string& path, std::vector<LogitsCase>* cases, std::string* error) {
  return ForEachLine(path, error, [&](const std::string& keyword, std::istringstream& in) {
    if (keyword == "prompt") {
      cases->push_back({});
      in >> cases->back().name;
      return true;
    }
    if (cases->empty()) return false;
    if (keyword == "ids") {
      cases->back().ids = ReadNumbers<int32_t>(in);
      return true;
    }
    if (keyword == "text") return true;  // the prompt's text; the ids are what is compared
    if (keyword == "pos") {
      LogitsPosition p;
      std::string top_word, pair;
      in >> p.position >> top_word;
      while (in >> pair) {
        size_t colon = pair.find(':');
        if (colon == std::string::npos) return false;
        p.top.push_back({std::stoi(pair.substr(0, colon)), std::stof(pair.substr(colon + 1))});
      }
      cases->back().positions.push_back(p);
      return top_word == "top";
    }
    return false;
  });
}

bool ReadGreedyGolden(const std::string& path, std::vector<GreedyCase>* cases, std::string* error) {
  return ForEachLine(path, error, [&](const std::string& keyword, std::istringstream& in) {
    if (keyword == "case") {
      GreedyCase c;
      std::string chat_word;
      int chat = 0;
      in >> c.name >> chat_word >> chat;
      c.chat = chat != 0;
      cases->push_back(c);
      return chat_word == "chat";
    }
    if (cases->empty()) return false;
    GreedyCase& c = cases->back();
    if (keyword == "text") {
      std::string hex;
      in >> hex;
      c.text = FromHex(hex);
    } else if (keyword == "prompt_ids") {
      c.prompt_ids = ReadNumbers<int32_t>(in);
    } else if (keyword == "tokens") {
      c.tokens = ReadNumbers<int32_t>(in);
    } else if (keyword == "gaps") {
      c.gaps = ReadNumbers<float>(in);
    } else if (keyword == "deviation") {
      c.deviations = ReadNumbers<float>(in);
    } else if (keyword == "top1") {
      c.top1 = ReadNumbers<float>(in);
    } else {
      return false;
    }
    return true;
  });
}

bool ReadWindowLogitsGolden(const char* path, WindowLogitsGolden* g) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string key;
    s >> key;
    if (key == "window") {
      s >> g->window;
    } else if (key == "sinks") {
      s >> g->sinks;
    } else if (key == "global_window") {
      s >> g->global_window;
    } else if (key == "tokens") {
      for (int32_t t = 0; s >> t;) g->tokens.push_back(t);
    } else if (key == "logits") {
      int position = 0;
      s >> position;
      if (position != g->window + static_cast<int>(g->logits.size())) return false;
      std::vector<float>& row = g->logits.emplace_back();
      for (float v = 0; s >> v;) row.push_back(v);
    }
  }
  return g->window > 0 && !g->logits.empty() &&
         g->tokens.size() == g->logits.size() + static_cast<size_t>(g->window);
}

}  // namespace staticlm::test
