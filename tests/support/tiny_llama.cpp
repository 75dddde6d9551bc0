// WriteTinyLlama: a small random-weight Llama model in the layout llama.cpp writes, with
// SmolLM2-135M-Instruct's tokenizer metadata cut down to a few hundred tokens.
#include <cmath>
#include <numbers>
#include <random>

#include "tests/support/gguf_writer.h"
#include "tests/support/weight_encoding.h"

namespace staticlm::test {

namespace {

using gguf::ValueType;

constexpr int kSpecialTokenCount = 17;
constexpr int32_t kTokenTypeNormal = 1;
constexpr int32_t kTokenTypeControl = 3;

// SmolLM2's special tokens at ids 0..16.
const char* const kSpecialTokens[kSpecialTokenCount] = {
    "<|endoftext|>",    "<|im_start|>",    "<|im_end|>",     "<repo_name>",    "<reponame>",
    "<file_sep>",       "<filename>",      "<gh_stars>",     "<issue_start>",  "<issue_comment>",
    "<issue_closed>",   "<jupyter_start>", "<jupyter_text>", "<jupyter_code>", "<jupyter_output>",
    "<jupyter_script>", "<empty_output>",
};

// SmolLM2's first 48 merges, in rank order ("Ġ" is GPT-2's stand-in for a space byte).
const char* const kMerges[] = {
    "Ġ t",  "Ġ a",   "i n", "h e", "Ġ Ġ", "r e",  "o n",  "e r",  "Ġt he", "a t",  "Ġ s",  "Ġ o",
    "e n",  "Ġ c",   "e s", "Ġ w", "n d", "i t",  "o r",  "i s",  "a l",   "Ġ p",  "in g", "Ġ f",
    "a n",  "e d",   "Ġ b", "o u", "a r", "Ġ in", "Ġo f", "Ġ m",  "Ġa nd", "i on", "i c",  "Ġ d",
    "Ġt o", "ĠĠ ĠĠ", "l e", "r o", "a s", "en t", "Ġ h",  "Ġt h", "c t",   "Ġ e",  "Ġ re", "e l",
};

const char kChatTemplate[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}";

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// GPT-2's byte-level alphabet in code point order: printable Latin-1 bytes stand for
// themselves; the other bytes, in order, become U+0100, U+0101, ...
std::vector<std::string> ByteLevelCharacters() {
  std::vector<bool> printable(256, false);
  for (uint32_t b = '!'; b <= '~'; ++b) printable[b] = true;
  for (uint32_t b = 0xa1; b <= 0xac; ++b) printable[b] = true;
  for (uint32_t b = 0xae; b <= 0xff; ++b) printable[b] = true;
  std::vector<std::string> chars;
  for (uint32_t b = 0; b < 256; ++b) {
    if (printable[b]) AppendUtf8(b, &chars.emplace_back());
  }
  uint32_t next = 0x100;
  for (uint32_t b = 0; b < 256; ++b) {
    if (!printable[b]) AppendUtf8(next++, &chars.emplace_back());
  }
  return chars;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in (0, 1), from the engine's bits (std::mt19937_64's output is standardized,
  // unlike the standard distributions, so files are identical on every platform).
  double Uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  float Normal(float stddev) {
    double u1 = Uniform();
    double u2 = Uniform();
    return static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(2 * std::numbers::pi * u2));
  }

 private:
  std::mt19937_64 engine_;
};

void AddMatrix(GgufWriter* w, Rng* rng, const std::string& name, int64_t cols, int64_t rows,
               DType type, float stddev) {
  std::vector<float> x(static_cast<size_t>(cols * rows));
  for (float& v : x) v = rng->Normal(stddev);
  w->AddTensor(name, {cols, rows}, type, EncodeFloats(type, x));
}

void AddNorm(GgufWriter* w, Rng* rng, const std::string& name, int64_t n, float jitter) {
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = 1.0f + jitter * static_cast<float>(2 * rng->Uniform() - 1);
  w->AddTensor(name, {n}, DType::kF32, EncodeFloats(DType::kF32, x));
}

bool IsBlockType(DType t) {
  return GetDTypeInfo(t).block_elements > 1;
}

Status CheckOptions(const TinyLlamaOptions& o) {
  if (o.block_count == 0 || o.head_count == 0 || o.head_count_kv == 0 ||
      o.embedding_length % o.head_count != 0 || o.head_count % o.head_count_kv != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "tiny llama: bad head layout (%u heads, %u kv heads, width %u)",
                         o.head_count, o.head_count_kv, o.embedding_length);
  }
  if ((IsBlockType(o.weight_type) || IsBlockType(o.embedding_type)) &&
      (o.embedding_length % 32 != 0 || o.feed_forward_length % 32 != 0)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "tiny llama: quantized weights need width and FFN multiples of 32");
  }
  if (o.weight_type == DType::kI32 || o.embedding_type == DType::kI32) {
    return Status::Error(StatusCode::kInvalidArgument, "tiny llama: I32 weights make no sense");
  }
  return Status::Ok();
}

void AddTokenizer(const TinyLlamaOptions& options, GgufWriter* w) {
  std::vector<std::string> tokens = TinyLlamaTokens();
  std::vector<int32_t> types(tokens.size(), kTokenTypeNormal);
  for (int i = 0; i < kSpecialTokenCount; ++i) types[i] = kTokenTypeControl;
  w->AddString("tokenizer.ggml.model", "gpt2");
  w->AddString("tokenizer.ggml.pre", "smollm");
  w->AddStringArray("tokenizer.ggml.tokens", tokens);
  w->AddArray("tokenizer.ggml.token_type", ValueType::kI32, types);
  w->AddStringArray("tokenizer.ggml.merges", TinyLlamaMerges());
  w->AddU32("tokenizer.ggml.bos_token_id", 1);
  w->AddU32("tokenizer.ggml.eos_token_id", 2);
  w->AddU32("tokenizer.ggml.unknown_token_id", 0);
  w->AddU32("tokenizer.ggml.padding_token_id", 2);
  w->AddBool("tokenizer.ggml.add_bos_token", false);
  w->AddBool("tokenizer.ggml.add_space_prefix", false);
  const char* chat = options.chat_template != nullptr ? options.chat_template : kChatTemplate;
  if (chat[0] != '\0') w->AddString("tokenizer.chat_template", chat);
}

}  // namespace

std::vector<std::string> TinyLlamaTokens() {
  std::vector<std::string> tokens(kSpecialTokens, kSpecialTokens + kSpecialTokenCount);
  for (std::string& c : ByteLevelCharacters()) tokens.push_back(std::move(c));
  for (const std::string& merge : TinyLlamaMerges()) {
    std::string merged = merge;
    merged.erase(merged.find(' '), 1);
    tokens.push_back(merged);
  }
  return tokens;
}

std::vector<std::string> TinyLlamaMerges() {
  return std::vector<std::string>(std::begin(kMerges), std::end(kMerges));
}

const char* SmolLM2ChatTemplate() {
  return kChatTemplate;
}

Status BuildTinyLlama(const TinyLlamaOptions& o, GgufWriter* w) {
  STATICLM_RETURN_IF_ERROR(CheckOptions(o));
  const int64_t n_vocab = static_cast<int64_t>(TinyLlamaTokens().size());
  const int64_t d = o.embedding_length;
  const int64_t head_dim = d / o.head_count;
  const int64_t d_kv = head_dim * o.head_count_kv;
  const int64_t ff = o.feed_forward_length;

  if (o.alignment != gguf::kDefaultAlignment) w->SetAlignment(o.alignment);
  w->AddString("general.architecture", "llama");
  w->AddString("general.name", "tiny-llama");
  w->AddU32("llama.block_count", o.block_count);
  w->AddU32("llama.context_length", o.context_length);
  w->AddU32("llama.embedding_length", o.embedding_length);
  w->AddU32("llama.feed_forward_length", o.feed_forward_length);
  w->AddU32("llama.attention.head_count", o.head_count);
  w->AddU32("llama.attention.head_count_kv", o.head_count_kv);
  w->AddF32("llama.rope.freq_base", o.rope_freq_base);
  w->AddF32("llama.attention.layer_norm_rms_epsilon", o.rms_epsilon);
  w->AddU32("llama.vocab_size", static_cast<uint32_t>(n_vocab));
  w->AddU32("llama.rope.dimension_count",
            o.rope_dimension_count > 0 ? o.rope_dimension_count : static_cast<uint32_t>(head_dim));
  AddTokenizer(o, w);

  Rng rng(o.seed);
  const float s = o.matrix_stddev;
  AddMatrix(w, &rng, "token_embd.weight", d, n_vocab, o.embedding_type, s);
  for (uint32_t layer = 0; layer < o.block_count; ++layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    AddNorm(w, &rng, p + "attn_norm.weight", d, o.norm_jitter);
    AddMatrix(w, &rng, p + "attn_q.weight", d, d, o.weight_type, s);
    AddMatrix(w, &rng, p + "attn_k.weight", d, d_kv, o.weight_type, s);
    AddMatrix(w, &rng, p + "attn_v.weight", d, d_kv, o.weight_type, s);
    AddMatrix(w, &rng, p + "attn_output.weight", d, d, o.weight_type, s);
    AddNorm(w, &rng, p + "ffn_norm.weight", d, o.norm_jitter);
    AddMatrix(w, &rng, p + "ffn_gate.weight", d, ff, o.weight_type, s);
    AddMatrix(w, &rng, p + "ffn_up.weight", d, ff, o.weight_type, s);
    AddMatrix(w, &rng, p + "ffn_down.weight", ff, d, o.weight_type, s);
  }
  AddNorm(w, &rng, "output_norm.weight", d, o.norm_jitter);
  if (o.untied_output) AddMatrix(w, &rng, "output.weight", d, n_vocab, o.embedding_type, s);
  return Status::Ok();
}

Status WriteTinyLlama(const char* path, const TinyLlamaOptions& options) {
  GgufWriter writer;
  STATICLM_RETURN_IF_ERROR(BuildTinyLlama(options, &writer));
  return writer.WriteFile(path);
}

}  // namespace staticlm::test
