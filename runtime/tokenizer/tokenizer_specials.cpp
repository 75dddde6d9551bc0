// Tokenizer: finding special tokens (control and user-defined) written in the text.
//
// The references split these off the raw text before anything else, leftmost first and,
// at one position, the longest text (Hugging Face's added-token matcher; llama.cpp's
// special-token partition). Encode asks MatchSpecial at each byte; Gemma has 6,400
// specials, 6,300 of them starting with '<', so a scan of every candidate per byte would
// make text full of '<' cost ~30 ms per KiB: instead each distinct length of the specials
// starting with that byte is one hash lookup.
#include <algorithm>

#include "runtime/tokenizer/tokenizer.h"

namespace staticlm {

Status Tokenizer::InitSpecials() {
  std::vector<int32_t> specials;
  size_t user_defined = 0;
  for (size_t i = 0; i < attrs_.size(); ++i) {
    if ((attrs_[i] & (kAttrControl | kAttrUserDefined)) == 0) continue;
    // Gemma's space-run tokens are merge results, not specials (see SpmVocabOptions).
    if (model_ == Model::kSpm && !spm_merges_ && spm_vocab_.Respelled(static_cast<int32_t>(i))) {
      continue;
    }
    if (TokenText(static_cast<int32_t>(i)).empty()) continue;
    specials.push_back(static_cast<int32_t>(i));
    if ((attrs_[i] & kAttrUserDefined) != 0) ++user_defined;
  }
  // By first byte, then longest first (then lowest id, from the stable sort).
  std::stable_sort(specials.begin(), specials.end(), [this](int32_t a, int32_t b) {
    const std::string_view ta = TokenText(a);
    const std::string_view tb = TokenText(b);
    if (ta[0] != tb[0]) return static_cast<uint8_t>(ta[0]) < static_cast<uint8_t>(tb[0]);
    return ta.size() > tb.size();
  });

  const text::SpellingTable texts{text_.data(), text_offsets_.data(), attrs_.size()};
  STATICLM_RETURN_IF_ERROR(special_index_.Init(texts, std::max<size_t>(specials.size(), 1)));
  STATICLM_RETURN_IF_ERROR(user_index_.Init(texts, std::max<size_t>(user_defined, 1)));
  // Inserted last to first, so the lowest id of a shared text is the one kept.
  for (size_t k = specials.size(); k-- > 0;) {
    special_index_.Insert(specials[k]);
    if ((attrs_[specials[k]] & kAttrUserDefined) != 0) user_index_.Insert(specials[k]);
  }

  special_lengths_.clear();
  size_t k = 0;
  for (int b = 0; b < 256; ++b) {
    length_begin_[b] = static_cast<uint32_t>(special_lengths_.size());
    for (; k < specials.size() && static_cast<uint8_t>(TokenText(specials[k])[0]) == b; ++k) {
      const auto len = static_cast<uint32_t>(TokenText(specials[k]).size());
      if (special_lengths_.size() == length_begin_[b] || special_lengths_.back() != len) {
        special_lengths_.push_back(len);
      }
    }
  }
  length_begin_[256] = static_cast<uint32_t>(special_lengths_.size());
  special_lengths_.shrink_to_fit();
  return Status::Ok();
}

// The special token whose text starts at text[pos], longest first, or -1. Run-phase safe.
int32_t Tokenizer::MatchSpecial(std::string_view text, size_t pos, bool parse_special) const {
  const std::string_view rest = text.substr(pos);
  const auto first = static_cast<uint8_t>(text[pos]);
  const text::TokenIndex& index = parse_special ? special_index_ : user_index_;
  for (uint32_t k = length_begin_[first]; k < length_begin_[first + 1]; ++k) {
    const uint32_t len = special_lengths_[k];
    if (len > rest.size()) continue;
    const int32_t id = index.Find(rest.substr(0, len));
    if (id >= 0) return id;
  }
  return -1;
}

}  // namespace staticlm
