// The pre-tokenizer: splits text into the pieces that BPE encodes one at a time.
//
// kGpt2 is the GPT-2 regex, implemented by hand (no regex engine, no allocation):
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// kDigitsThenGpt2 (SmolLM, StarCoder) first isolates every \p{N} code point as a piece of
// its own (Hugging Face's Digits(individual_digits) step), then applies the GPT-2 regex to
// each stretch of text between them, so a stretch ends where a number begins: "a 1" is
// "a", " ", "1", never "a", " 1". kDigitRunsThenGpt2 is the same with each run of \p{N}
// isolated whole (Digits with individual_digits false).
// kLlama3 and kQwen2 are the split regexes of the Llama 3 and Qwen2 tokenizer.json files:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with \p{N}{1,3} (Llama 3: numbers in groups of up to three) or \p{N} (Qwen2: one each).
// kGpt4o is the o200k split regex of GPT-4o's tokenizer.json (Phi-4-mini's; GGUF "gpt-4o"),
// which keeps a word's case shape together and takes a contraction after the word:
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//   \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
#pragma once

#include <cstddef>
#include <string_view>

namespace staticlm::text {

enum class PreTokenizerKind {
  kGpt2,
  kDigitsThenGpt2,
  kDigitRunsThenGpt2,
  kLlama3,
  kQwen2,
  kGpt4o,
};

// Walks `text`, which must be valid UTF-8 and must outlive the splitter. Run-phase safe: no
// allocation; each call to Next does work proportional to the piece it returns.
class PieceSplitter {
 public:
  PieceSplitter(std::string_view text, PreTokenizerKind kind) : text_(text), kind_(kind) {}

  // Stores the next piece (never empty) and returns true, or returns false at the end.
  bool Next(std::string_view* piece);

 private:
  size_t PieceEnd(size_t pos) const;
  size_t PieceEndLlama3(size_t pos, size_t max_digits) const;
  size_t PieceEndGpt4o(size_t pos) const;
  size_t CasedWordEnd(size_t start, bool lower_run_required) const;
  size_t WithContraction(size_t end) const;
  size_t CrLfRunEnd(size_t pos) const;
  size_t SpacesWithLineBreaksEnd(size_t pos) const;
  size_t WhitespaceEnd(size_t pos) const;
  size_t RunEnd(size_t pos, int cls) const;
  int ClassAt(size_t pos, size_t* next) const;
  bool AtStretchEnd(size_t pos) const;

  std::string_view text_;
  PreTokenizerKind kind_;
  size_t pos_ = 0;
};

}  // namespace staticlm::text
