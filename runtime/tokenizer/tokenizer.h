// Tokenizer: the two vocabularies GGUF files carry.
//   - tokenizer.ggml.model = "gpt2": byte-level BPE (GPT-2 style), as used by SmolLM2: a
//     pre-tokenizer splits the text, then ranked merges (BpeEncoder).
//   - tokenizer.ggml.model = "llama": SentencePiece, as used by Gemma 3: spaces become "▁"
//     (U+2581), then score- or position-ordered merges with byte fallback (SpmEncoder). The
//     ids are those of the tokenizer transformers builds from the GGUF file.
// Both share the vocabulary tables, the special-token matching and the decoding below.
// A Hugging Face tokenizer.json becomes the same spec (tokenizer_json.h): byte-level BPE with
// its split pattern, or SentencePiece-style BPE ordered by its merge list with byte fallback,
// plus the options only such files carry (NFC, ignore_merges, lstrip/rstrip, space rules).
//
// Built once from a TokenizerSpec (the tokenizer.ggml.* metadata, see tokenizer_from_gguf.h);
// Init copies everything it needs and allocates all the scratch Encode will use, so the
// spec's memory may be freed afterwards. Encode then never allocates and does bounded work:
// O(n log n) in the text's length n, which Init caps.
//
// Decoding: TokenBytes gives the bytes a token stands for (byte-level spelling undone, or
// "▁" turned back into a space; <0xNN> byte tokens give their byte; control tokens give
// their text). Spaces are never cleaned up. To stream text without splitting UTF-8
// characters, see Detokenizer (detokenizer.h).
//
// Not thread-safe: Encode uses the object's scratch. Const calls may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "runtime/tokenizer/bpe_encoder.h"
#include "runtime/tokenizer/merge_table.h"
#include "runtime/tokenizer/nfc.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "runtime/tokenizer/spm_encoder.h"
#include "runtime/tokenizer/spm_vocab.h"
#include "runtime/tokenizer/token_index.h"
#include "runtime/tokenizer/token_type.h"

namespace staticlm {

// Where a SentencePiece-style vocabulary puts a "▁" before a stretch of text (the text
// between special tokens): never, only before the stretch that starts the text, or before
// every stretch. Unless `prefix_always_added`, not before one that already starts with a space.
enum class SpacePrefix : uint8_t { kNever, kFirst, kAlways };

// Per-token flags of added tokens (tokenizer.json's lstrip and rstrip): the whitespace
// before (lstrip) or after (rstrip) the token's text is swallowed by it.
inline constexpr uint8_t kTokenLstrip = 1;
inline constexpr uint8_t kTokenRstrip = 2;

// What Tokenizer::Init reads. Views are borrowed only for the duration of Init.
struct TokenizerSpec {
  std::string_view model;  // tokenizer.ggml.model: "gpt2" or "llama"
  // tokenizer.ggml.pre (gpt2 only): "gpt2"/"gpt-2", "smollm"/"starcoder", "llama-bpe",
  // "qwen2" (see PreTokenizerOfGgufName in tokenizer_init.cpp)
  std::string_view pre;
  // general.architecture. For "llama" vocabularies of gemma, gemma2 and gemma3 files it
  // selects the rules transformers applies to those (see SpmVocabOptions and Init).
  std::string_view architecture;
  std::vector<std::string_view> tokens;  // tokenizer.ggml.tokens (byte-level or "▁" spelled)
  std::vector<std::string_view> merges;  // tokenizer.ggml.merges, "left right" by rank (gpt2)
  std::vector<float> scores;             // tokenizer.ggml.scores; required for "llama"
  std::vector<int32_t> token_types;      // tokenizer.ggml.token_type; empty: all normal
  int32_t bos_id = -1;                   // -1: absent
  int32_t eos_id = -1;
  int32_t eot_id = -1;   // end of turn, when the file names one
  int32_t unk_id = -1;   // tokenizer.ggml.unknown_token_id
  bool add_bos = false;  // tokenizer.ggml.add_bos_token
  // tokenizer.ggml.add_space_prefix ("llama" only): prepend "▁" to text that does not start
  // with a space. Absent means true, as in llama.cpp and transformers' LlamaTokenizer.
  // Gemma files ignore it (transformers' GemmaTokenizer never prepends).
  bool add_space_prefix = true;

  // Set only by the tokenizer.json reader (tokenizer_json.h); a GGUF file leaves these.
  bool has_pre_kind = false;  // pre_kind replaces `pre`
  text::PreTokenizerKind pre_kind = text::PreTokenizerKind::kGpt2;
  bool ignore_merges = false;  // BPE: a piece that is itself a token is not merged (Llama 3)
  bool nfc = false;            // an NFC normalizer: each stretch is NFC-normalized first
  // "llama" with merges: the space rules below replace add_space_prefix and Gemma's rules.
  bool has_space_rules = false;
  SpacePrefix space_prefix = SpacePrefix::kFirst;
  bool prefix_always_added = false;  // a Prepend normalizer: even before a leading space
  bool split_at_metaspace = false;   // Metaspace split: every "▁" starts a new word
  bool fuse_unk = false;             // consecutive unknown characters give one unk token
  std::vector<uint8_t> token_flags;  // kTokenLstrip | kTokenRstrip per token; empty: none
  // How many leading spaces the decoder strips from a whole decoded text (a Strip decoder).
  int32_t decode_strip_leading = 0;
};

class Tokenizer {
 public:
  // Init only; allocates. `max_text_bytes` bounds the text Encode accepts and sizes its
  // scratch. kUnsupported for a model or pre-tokenizer other than those above (or merges in
  // a "llama" vocabulary); kFormatError for an inconsistent vocabulary (naming the token,
  // merge or GGUF key: e.g. scores missing or miscounted, a byte-fallback token missing).
  Status Init(const TokenizerSpec& spec, size_t max_text_bytes);

  // Run-phase safe: no allocation. Tokenizes `text` into out[0 .. *n_out). With
  // `parse_special`, the text of a control token (e.g. "<|im_start|>") becomes that token;
  // user-defined tokens are always recognised (except Gemma's space runs, which merging
  // forms); the longest match wins. Prepends BOS only when the file's add_bos flag is set.
  // At most text.size() + 1 ids are written, one more with a SentencePiece space prefix
  // (and three per space for a SentencePiece vocabulary without a "▁" token; with an NFC
  // normalizer, up to kNfcMaxExpansion times as many, NFC lengthening some text).
  // kInvalidArgument when text exceeds max_text_bytes, is not valid UTF-8, or the ids do
  // not fit in `capacity`; kInvalidState before Init.
  Status Encode(std::string_view text, bool parse_special, int32_t* out, size_t capacity,
                size_t* n_out);

  int32_t vocab_size() const { return static_cast<int32_t>(attrs_.size()); }
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t unk_id() const { return unk_id_; }  // -1: none; never produced (byte fallback)
  bool add_bos() const { return add_bos_; }
  size_t max_text_bytes() const { return max_text_bytes_; }
  // Leading spaces a full decode drops (tokenizer.json's Strip decoder; 0 otherwise).
  // TokenBytes never drops them: a streamed continuation keeps its spaces.
  int32_t decode_strip_leading() const { return decode_strip_leading_; }
  // Host memory this tokenizer holds after Init, in bytes: its vocabulary and merge tables
  // and the Encode scratch (all of it sized at Init, none of it growing later).
  size_t ScratchBytes() const;
  // The most bytes any single token decodes to.
  size_t max_token_bytes() const { return max_token_bytes_; }

  // True for tokens that end a generation: EOS, EOT, and control tokens such as
  // <|im_end|> and <|endoftext|>. False for ids out of range.
  bool IsEndOfGeneration(int32_t id) const;
  bool IsControl(int32_t id) const;

  // The raw vocabulary string of a token (byte-level spelled); empty for ids out of range.
  std::string_view TokenText(int32_t id) const;
  // The bytes a token stands for, borrowed from the tokenizer; empty for ids out of range.
  std::string_view TokenBytesView(int32_t id) const;
  // Copies TokenBytesView(id) to out. kInvalidArgument for an id out of range or when the
  // bytes do not fit in `cap`. No allocation.
  Status TokenBytes(int32_t id, char* out, size_t cap, size_t* n) const;

 private:
  Status InitVocabulary(const TokenizerSpec& spec);
  Status InitMerges(const TokenizerSpec& spec);
  Status InitSpm(const TokenizerSpec& spec, size_t max_text_bytes);
  Status InitSpmMerges(const TokenizerSpec& spec, size_t max_text_bytes);
  Status InitNormalIndex();
  size_t DecodeTokenBytes(size_t i, TokenType type, std::string_view t, char* out, size_t cap,
                          Status* status) const;
  Status InitSpecials();
  int32_t MatchSpecial(std::string_view text, size_t pos, bool parse_special) const;
  Status EncodeStretch(std::string_view text, bool at_start, int32_t* out, size_t capacity,
                       size_t* n);
  Status EncodeSpmStretch(std::string_view text, bool at_start, int32_t* out, size_t capacity,
                          size_t* n);
  Status EncodeSpmWord(std::string_view word, int32_t* out, size_t capacity, size_t* n);
  Status EncodeBytePiece(std::string_view piece, int32_t* out, size_t capacity, size_t* n);
  size_t NormalizeSpmStretch(std::string_view text, bool at_start);

  enum class Model { kBpe, kSpm };

  static constexpr uint8_t kAttrControl = 1;      // recognised only with parse_special
  static constexpr uint8_t kAttrUserDefined = 2;  // always recognised
  static constexpr uint8_t kAttrEndOfGen = 4;
  static constexpr uint8_t kAttrNormal = 8;   // byte-level spelled, takes part in BPE
  static constexpr uint8_t kAttrLstrip = 16;  // swallows the whitespace before it
  static constexpr uint8_t kAttrRstrip = 32;  // swallows the whitespace after it

  bool initialized_ = false;
  Model model_ = Model::kBpe;
  text::PreTokenizerKind pre_ = text::PreTokenizerKind::kGpt2;
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  int32_t unk_id_ = -1;
  bool add_bos_ = false;
  size_t max_text_bytes_ = 0;
  size_t max_token_bytes_ = 0;
  int32_t decode_strip_leading_ = 0;
  bool ignore_merges_ = false;
  bool nfc_enabled_ = false;
  text::NfcNormalizer nfc_;  // with nfc_enabled_ only
  // SentencePiece-style only: where "▁" goes (see SpacePrefix), and whether merges come
  // from a merge list (tokenizer.json, pair ranks as Hugging Face's BPE) or from scores.
  SpacePrefix space_prefix_ = SpacePrefix::kNever;
  bool prefix_always_added_ = false;
  bool split_at_metaspace_ = false;
  bool spm_merges_ = false;
  bool fuse_unk_ = false;

  // Token i's text is text_[text_offsets_[i] .. text_offsets_[i + 1]), likewise its bytes.
  std::vector<char> text_;
  std::vector<uint32_t> text_offsets_;
  std::vector<char> bytes_;
  std::vector<uint32_t> bytes_offsets_;
  std::vector<uint8_t> attrs_;

  // The single-byte token of each byte; -1 for bytes the vocabulary lacks (SmolLM2 has no
  // token for a few control bytes such as 0x04), which Encode drops like the reference.
  int32_t byte_ids_[256] = {};
  // SentencePiece-style with a merge list: the <0xNN> byte-fallback token of each byte, -1
  // where the vocabulary has none.
  int32_t fallback_ids_[256] = {};
  text::MergeTable merges_;
  // Special tokens (control and user-defined) by text: special_index_ holds all of them,
  // user_index_ the user-defined ones (matched without parse_special); a text shared by
  // several maps to the lowest id. special_lengths_[length_begin_[b] .. length_begin_[b + 1])
  // are the distinct lengths of the specials starting with byte b, longest first, so a
  // match costs one lookup per length rather than a scan of every special.
  text::TokenIndex special_index_;
  text::TokenIndex user_index_;
  std::vector<uint32_t> special_lengths_;
  uint32_t length_begin_[257] = {};
  text::BpeEncoder bpe_;
  // Normal tokens by the bytes they stand for (byte-level with ignore_merges), or by their
  // spelling (SentencePiece-style with a merge list: a character's token).
  text::TokenIndex normal_index_;

  // SentencePiece ("llama") only: the merge vocabulary, the encoder, and the buffer a
  // stretch of text is normalized into (spaces as "▁", 3 bytes each, plus a prefix).
  text::SpmVocab spm_vocab_;
  text::SpmEncoder spm_;
  std::vector<char> normalized_;
};

}  // namespace staticlm
