#include "tests/support/spm_toy_vocab.h"

#include <cstdio>

namespace staticlm::test {

namespace {

struct Piece {
  const char* text;
  float score;
  TokenType type;
};

// Ids 259.. in order. "ca" scores best of all but comes last, so score order and position
// order (Gemma's) disagree on it; "  " is a Gemma-style space run stored with real spaces.
constexpr Piece kPieces[] = {
    {"\xE2\x96\x81", -1, TokenType::kNormal},  // 259 "▁"
    {"a", -2, TokenType::kNormal},             // 260
    {"b", -3, TokenType::kNormal},             // 261
    {"c", -4, TokenType::kNormal},             // 262
    {"bc", -5, TokenType::kNormal},            // 263
    {"ab", -6, TokenType::kNormal},            // 264
    {"abc", -7, TokenType::kNormal},           // 265
    {"\xE2\x96\x81"
     "a",
     -8, TokenType::kNormal},                 // 266 "▁a"
    {"  ", -1000, TokenType::kUserDefined},   // 267
    {"<x>", -1000, TokenType::kControl},      // 268
    {"<", -9, TokenType::kNormal},            // 269
    {"x", -10, TokenType::kNormal},           // 270
    {">", -11, TokenType::kNormal},           // 271
    {"<x", -12, TokenType::kNormal},          // 272
    {"x>", -13, TokenType::kNormal},          // 273
    {"[u]", -1000, TokenType::kUserDefined},  // 274
    {"ca", -0.5f, TokenType::kNormal},        // 275
};

}  // namespace

SpmToyVocab::SpmToyVocab() {
  tokens = {"<unk>", "<s>", "</s>"};
  types = {static_cast<int32_t>(TokenType::kUnknown), static_cast<int32_t>(TokenType::kControl),
           static_cast<int32_t>(TokenType::kControl)};
  scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    tokens.emplace_back(name);
    types.push_back(static_cast<int32_t>(TokenType::kByte));
    scores.push_back(0);
  }
  for (const Piece& p : kPieces) {
    tokens.emplace_back(p.text);
    types.push_back(static_cast<int32_t>(p.type));
    scores.push_back(p.score);
  }
}

TokenizerSpec SpmToyVocab::Spec(const std::string& architecture) const {
  TokenizerSpec spec;
  spec.model = "llama";
  spec.architecture = architecture == "gemma3" ? "gemma3" : "llama";
  for (const std::string& t : tokens) spec.tokens.push_back(t);
  spec.scores = scores;
  spec.token_types = types;
  spec.bos_id = kBos;
  spec.eos_id = kEos;
  spec.unk_id = kUnk;
  return spec;
}

void SpmToyVocab::AddToGguf(GgufWriter* writer, const std::string& architecture) const {
  writer->AddString("general.architecture", architecture);
  writer->AddString("tokenizer.ggml.model", "llama");
  writer->AddString("tokenizer.ggml.pre", "default");
  writer->AddStringArray("tokenizer.ggml.tokens", tokens);
  writer->AddArray("tokenizer.ggml.scores", gguf::ValueType::kF32, scores);
  writer->AddArray("tokenizer.ggml.token_type", gguf::ValueType::kI32, types);
  writer->AddU32("tokenizer.ggml.bos_token_id", kBos);
  writer->AddU32("tokenizer.ggml.eos_token_id", kEos);
  writer->AddU32("tokenizer.ggml.unknown_token_id", kUnk);
  writer->AddBool("tokenizer.ggml.add_bos_token", true);
}

}  // namespace staticlm::test
