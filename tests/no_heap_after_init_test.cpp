// The run phase makes no heap allocation or free and creates no thread: from the end of init
// through chat formatting, tokenization, prefill (chunked), decode, every sampler setting,
// streaming detokenization, a second chat turn, a reset and a new conversation, snapshots and
// session files. malloc, free, operator new/delete and pthread_create are interposed in this
// binary (platform/alloc_counter.cpp); the test fails on the first event and says where.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "platform/alloc_counter.h"
#include "runtime/tokenizer/chat_template.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace {

namespace counter = staticlm::alloc_counter;
using staticlm::test::ContextPtr;

// One chat turn through the public API, as an embedding app would run it.
void ChatTurn(staticlm_context* ctx, const char* user, bool first, const staticlm_sampler& s,
              char* text, size_t text_cap, int32_t* tokens, size_t token_cap) {
  staticlm_chat_message messages[1] = {{"user", user}};
  size_t prefix = 0;
  if (!first) {
    std::memcpy(text, "<|im_end|>", 10);
    prefix = 10;
  }
  size_t n_text = 0, n_tokens = 0;
  ASSERT_EQ(staticlm_format_chat(ctx, messages, 1, 1, first ? 0 : 1, text + prefix,
                                 text_cap - prefix, &n_text),
            STATICLM_OK);
  ASSERT_EQ(staticlm_tokenize(ctx, text, prefix + n_text, 1, tokens, token_cap, &n_tokens),
            STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx, tokens, n_tokens), STATICLM_OK) << staticlm_last_error(ctx);
  char piece[128];
  for (int i = 0; i < 12; ++i) {
    int32_t token = 0;
    ASSERT_EQ(staticlm_sample(ctx, &s, &token), STATICLM_OK);
    size_t n = 0;
    ASSERT_EQ(staticlm_token_to_text(ctx, token, piece, sizeof(piece), &n), STATICLM_OK);
    if (staticlm_is_end_of_generation(ctx, token)) break;
    ASSERT_EQ(staticlm_decode(ctx, token), STATICLM_OK);
  }
  staticlm_flush_text(ctx, piece, sizeof(piece));
}

TEST(NoHeapAfterInitTest, WholeRunPhaseMakesNoHeapEventsAndNoThreads) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 512;
  limits.prefill_chunk = 16;  // the prompts span several chunks
  staticlm_context* raw = nullptr;
  char error[256];
  ASSERT_EQ(staticlm_create(STATICLM_DEFAULT_MODEL, &limits, &raw, error, sizeof(error)),
            STATICLM_OK)
      << error;
  ContextPtr ctx(raw);
  std::vector<char> text(size_t(limits.max_prompt_bytes));
  std::vector<int32_t> tokens(size_t(limits.max_prompt_bytes));

  staticlm_sampler greedy, creative;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  staticlm_sampler_default(&creative);
  creative.repetition_penalty = 1.3f;
  creative.repetition_window = 0;

  counter::Start();
  staticlm_seed(ctx.get(), 42);
  ChatTurn(ctx.get(), "What is the capital of France? Answer briefly.", true, greedy, text.data(),
           text.size(), tokens.data(), tokens.size());
  ChatTurn(ctx.get(), "And of Italy? Tell me a fact about it, in a long sentence.", false, creative,
           text.data(), text.size(), tokens.data(), tokens.size());
  staticlm_reset(ctx.get());
  ChatTurn(ctx.get(), "Write 3 words about snow ❄️ und Übermut.", true, creative, text.data(),
           text.size(), tokens.data(), tokens.size());
  // Errors in the run phase must not allocate either.
  int32_t bad = 1 << 30;
  EXPECT_EQ(staticlm_prefill(ctx.get(), &bad, 1), STATICLM_INVALID_ARGUMENT);
  const char invalid_utf8[] = "abc\xff";
  size_t n = 0;
  EXPECT_EQ(staticlm_tokenize(ctx.get(), invalid_utf8, 4, 1, tokens.data(), tokens.size(), &n),
            STATICLM_INVALID_ARGUMENT);
  (void)staticlm_last_error(ctx.get());
  counter::Stop();

  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Allocations(), 0u) << where;
  EXPECT_EQ(counter::Frees(), 0u) << where;
  EXPECT_EQ(counter::ThreadsCreated(), 0u) << where;
}

// The same with plans loaded from a plan file (staticlm plan -o / run --plan).
TEST(NoHeapAfterInitTest, LoadedPlanRunPhaseMakesNoHeapEvents) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 256;
  limits.prefill_chunk = 32;
  limits.threads = 2;
  std::string plan = staticlm::test::TempPath("no_heap.plan");
  char error[256];
  ASSERT_EQ(staticlm_save_plan(STATICLM_DEFAULT_MODEL, &limits, plan.c_str(), error, sizeof(error)),
            STATICLM_OK)
      << error;
  limits.plan_path = plan.c_str();
  staticlm_context* raw = nullptr;
  ASSERT_EQ(staticlm_create(STATICLM_DEFAULT_MODEL, &limits, &raw, error, sizeof(error)),
            STATICLM_OK)
      << error;
  ContextPtr ctx(raw);
  std::vector<char> text(size_t(limits.max_prompt_bytes));
  std::vector<int32_t> tokens(size_t(limits.max_prompt_bytes));
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);

  counter::Start();
  ChatTurn(ctx.get(), "Say hello in French.", true, sampler, text.data(), text.size(),
           tokens.data(), tokens.size());
  ChatTurn(ctx.get(), "And in German?", false, sampler, text.data(), text.size(), tokens.data(),
           tokens.size());
  counter::Stop();
  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Events(), 0u) << where;
  std::remove(plan.c_str());
}

// Every cache mode: rings (sliding window, sinks) run three turns past both the window and
// max_context, so the ring caches and the history ring wrap; q8 and q4 quantize as they go.
struct CacheMode {
  const char* name;
  staticlm_kv_type kv;
  int32_t context, window, sinks;
};

class NoHeapCacheModeTest : public ::testing::TestWithParam<CacheMode> {};

// A context in `mode` (chunk 16) with `batch` sequences; null after a test failure.
ContextPtr CreateInMode(const CacheMode& mode, int32_t batch, staticlm_limits* limits) {
  staticlm_limits_default(limits);
  limits->max_context = mode.context;
  limits->prefill_chunk = 16;
  limits->kv_type = mode.kv;
  limits->window = mode.window;
  limits->sinks = mode.sinks;
  limits->max_batch = batch;
  limits->threads = batch > 1 ? 2 : 1;
  limits->max_snapshots = batch > 1 ? 1 : 0;
  return staticlm::test::CreateContext(STATICLM_DEFAULT_MODEL, *limits);
}

TEST_P(NoHeapCacheModeTest, RunPhaseMakesNoHeapEvents) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  const CacheMode& mode = GetParam();
  staticlm_limits limits;
  ContextPtr ctx = CreateInMode(mode, 1, &limits);
  ASSERT_NE(ctx, nullptr);
  std::vector<char> text(size_t(limits.max_prompt_bytes));
  std::vector<int32_t> tokens(size_t(limits.max_prompt_bytes));
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  sampler.repetition_penalty = 1.2f;  // reads the history, in order, after the ring wraps
  sampler.repetition_window = 0;

  counter::Start();
  ChatTurn(ctx.get(), "What is the capital of France? Answer briefly, please.", true, sampler,
           text.data(), text.size(), tokens.data(), tokens.size());
  ChatTurn(ctx.get(), "And of Italy? Tell me a fact about it, in a long sentence.", false, sampler,
           text.data(), text.size(), tokens.data(), tokens.size());
  ChatTurn(ctx.get(), "Write three words about snow, then three about the sea.", false, sampler,
           text.data(), text.size(), tokens.data(), tokens.size());
  size_t n_history = 0;
  (void)staticlm_history(ctx.get(), &n_history);
  counter::Stop();
  if (mode.window > 0) {
    EXPECT_GT(staticlm_position(ctx.get()), mode.context);
  }
  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Events(), 0u) << where;
}

INSTANTIATE_TEST_SUITE_P(Modes, NoHeapCacheModeTest,
                         ::testing::Values(CacheMode{"window", STATICLM_KV_F16, 96, 48, 0},
                                           CacheMode{"sinks", STATICLM_KV_F16, 96, 48, 4},
                                           CacheMode{"q8", STATICLM_KV_Q8, 512, 0, 0},
                                           CacheMode{"q4", STATICLM_KV_Q4, 512, 0, 0},
                                           CacheMode{"window_q8", STATICLM_KV_Q8, 96, 48, 0},
                                           CacheMode{"sinks_q8", STATICLM_KV_Q8, 96, 48, 4},
                                           CacheMode{"window_q4", STATICLM_KV_Q4, 96, 48, 0},
                                           CacheMode{"sinks_q4", STATICLM_KV_Q4, 96, 48, 4}),
                         [](const auto& info) { return std::string(info.param.name); });

// Snapshots (save, restore, slot reuse) and sessions (save, load, a rejected load) too: the
// session calls do file I/O, but through buffers sized at init.
TEST(NoHeapAfterInitTest, SnapshotsAndSessionsMakeNoHeapEvents) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 256;
  limits.prefill_chunk = 16;
  limits.max_snapshots = 2;
  staticlm_context* raw = nullptr;
  char error[256];
  ASSERT_EQ(staticlm_create(STATICLM_DEFAULT_MODEL, &limits, &raw, error, sizeof(error)),
            STATICLM_OK)
      << error;
  ContextPtr ctx(raw);
  std::vector<char> text(size_t(limits.max_prompt_bytes));
  std::vector<int32_t> tokens(size_t(limits.max_prompt_bytes));
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  std::string session = staticlm::test::TempPath("no_heap.session");
  std::string truncated = staticlm::test::TempPath("no_heap_truncated.session");
  std::FILE* f = std::fopen(truncated.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("SLMSESS", f);
  std::fclose(f);

  counter::Start();
  ChatTurn(ctx.get(), "Say hello in French.", true, sampler, text.data(), text.size(),
           tokens.data(), tokens.size());
  EXPECT_EQ(staticlm_snapshot_save(ctx.get(), 0), STATICLM_OK);
  ChatTurn(ctx.get(), "And in German?", false, sampler, text.data(), text.size(), tokens.data(),
           tokens.size());
  EXPECT_EQ(staticlm_snapshot_save(ctx.get(), 1), STATICLM_OK);
  EXPECT_EQ(staticlm_snapshot_restore(ctx.get(), 0), STATICLM_OK);
  EXPECT_EQ(staticlm_snapshot_save(ctx.get(), 1), STATICLM_OK);  // a slot reused
  EXPECT_EQ(staticlm_snapshot_restore(ctx.get(), 1), STATICLM_OK);
  EXPECT_EQ(staticlm_snapshot_restore(ctx.get(), 5), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_session_save(ctx.get(), session.c_str()), STATICLM_OK)
      << staticlm_last_error(ctx.get());
  staticlm_reset(ctx.get());
  EXPECT_EQ(staticlm_session_load(ctx.get(), session.c_str()), STATICLM_OK)
      << staticlm_last_error(ctx.get());
  EXPECT_EQ(staticlm_session_load(ctx.get(), truncated.c_str()), STATICLM_FORMAT_ERROR);
  EXPECT_EQ(staticlm_session_save(ctx.get(), "/nonexistent-dir/x.session"), STATICLM_IO_ERROR);
  ChatTurn(ctx.get(), "And in Spanish?", false, sampler, text.data(), text.size(), tokens.data(),
           tokens.size());
  counter::Stop();
  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Events(), 0u) << where;
  std::remove(session.c_str());
  std::remove(truncated.c_str());
}

// Batched sequences: batched steps of changing membership, sequences prefilled, reset and
// reused, per-sequence sampling, text, snapshots and sessions — under the static cache and a
// quantized ring.
class NoHeapBatchTest : public ::testing::TestWithParam<CacheMode> {};

TEST_P(NoHeapBatchTest, BatchedRunPhaseMakesNoHeapEvents) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  staticlm_limits limits;
  ContextPtr ctx = CreateInMode(GetParam(), 3, &limits);
  ASSERT_NE(ctx, nullptr);
  const std::string prompt = "Write a short poem about the sea and the wind.";
  std::vector<int32_t> tokens(size_t(limits.max_prompt_bytes));
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  std::string session = staticlm::test::TempPath("no_heap_batch.session");
  char piece[128];

  counter::Start();
  size_t n = 0;
  ASSERT_EQ(staticlm_tokenize(ctx.get(), prompt.data(), prompt.size(), 1, tokens.data(),
                              tokens.size(), &n),
            STATICLM_OK);
  for (int32_t s = 0; s < 2; ++s) {
    ASSERT_EQ(staticlm_seq_prefill(ctx.get(), s, tokens.data(), n), STATICLM_OK);
  }
  EXPECT_EQ(staticlm_seq_snapshot_save(ctx.get(), 0, 0), STATICLM_OK);
  for (int step = 0; step < 70; ++step) {  // past the window of the ring modes
    if (step == 20) {                      // sequence 2 joins from the snapshot
      EXPECT_EQ(staticlm_seq_snapshot_restore(ctx.get(), 0, 2), STATICLM_OK);
    }
    if (step == 40) {  // sequence 1 ends; its slot takes a new prompt
      EXPECT_EQ(staticlm_seq_reset(ctx.get(), 1), STATICLM_OK);
      ASSERT_EQ(staticlm_seq_prefill(ctx.get(), 1, tokens.data(), n), STATICLM_OK);
    }
    int32_t seqs[3] = {2, 0, 1}, next[3] = {0, 0, 0};
    const size_t batch = step < 20 ? 2 : 3;
    const int32_t* order = step < 20 ? seqs + 1 : seqs;
    for (size_t r = 0; r < batch; ++r) {
      ASSERT_EQ(staticlm_seq_sample(ctx.get(), order[r], &sampler, &next[r]), STATICLM_OK);
      size_t bytes = 0;
      ASSERT_EQ(
          staticlm_seq_token_to_text(ctx.get(), order[r], next[r], piece, sizeof(piece), &bytes),
          STATICLM_OK);
    }
    ASSERT_EQ(staticlm_decode_batch(ctx.get(), order, next, batch), STATICLM_OK)
        << staticlm_last_error(ctx.get());
  }
  EXPECT_EQ(staticlm_seq_session_save(ctx.get(), 2, session.c_str()), STATICLM_OK)
      << staticlm_last_error(ctx.get());
  EXPECT_EQ(staticlm_seq_session_load(ctx.get(), 0, session.c_str()), STATICLM_OK)
      << staticlm_last_error(ctx.get());
  const int32_t dup[2] = {0, 0}, two[2] = {1, 1};
  EXPECT_EQ(staticlm_decode_batch(ctx.get(), dup, two, 2), STATICLM_INVALID_ARGUMENT);
  staticlm_seq_flush_text(ctx.get(), 0, piece, sizeof(piece));
  counter::Stop();
  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Events(), 0u) << where;
  std::remove(session.c_str());
}

INSTANTIATE_TEST_SUITE_P(Modes, NoHeapBatchTest,
                         ::testing::Values(CacheMode{"static", STATICLM_KV_F16, 256, 0, 0},
                                           CacheMode{"sinks_q8", STATICLM_KV_Q8, 96, 48, 4},
                                           CacheMode{"window_q4", STATICLM_KV_Q4, 96, 48, 0}),
                         [](const ::testing::TestParamInfo<CacheMode>& info) {
                           return std::string(info.param.name);
                         });

// Chat formatting in every format, with trimming, a system prefix, continuations and each error
// (roles that do not alternate, a full buffer, no format), through ChatTemplate and the C API.
TEST(NoHeapAfterInitTest, ChatFormatsMakeNoHeapEvents) {
  if (!counter::Available()) {
    GTEST_SKIP() << "sanitizer build: ASan interposes malloc itself, so counting is disabled";
  }
  staticlm::ChatTemplate gemma, chatml, none;
  ASSERT_TRUE(gemma.InitFormat("gemma", "<bos>").ok());
  ASSERT_TRUE(chatml.Init(staticlm::test::SmolLM2ChatTemplate()).ok());
  EXPECT_FALSE(none.Init("{{ messages }}").ok());
  const std::string path = staticlm::test::TempPath("no_heap_chat.gguf");
  staticlm::test::TinyLlamaOptions options;
  options.chat_template = "";
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(path.c_str(), options).ok());
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  ContextPtr bare = staticlm::test::CreateContext(path.c_str(), limits);
  ContextPtr forced = staticlm::test::CreateContext(path.c_str(), limits);
  ASSERT_TRUE(bare && forced);
  ASSERT_EQ(staticlm_set_chat_format(forced.get(), "gemma"), STATICLM_OK);
  const staticlm::ChatMessage msgs[] = {{"system", "Be brief."},
                                        {"user", "\u3000 Hello,\u00a0world! \n"},
                                        {"assistant", " Hi. "},
                                        {"user", "Bye."}};
  const staticlm::ChatMessage bad[] = {{"user", "a"}, {"user", "b"}};
  std::vector<char> out(4096);
  size_t n = 0;
  staticlm_chat_format_info info;

  counter::Start();
  for (const staticlm::ChatTemplate* t : {&gemma, &chatml}) {
    EXPECT_TRUE(t->FormatChat(msgs, 4, true, out.data(), out.size(), &n).ok());
    EXPECT_TRUE(t->FormatChat(msgs + 1, 3, false, out.data(), out.size(), &n).ok());
    EXPECT_TRUE(t->FormatContinuation(msgs + 3, 1, true, out.data(), out.size(), &n).ok());
    EXPECT_FALSE(t->FormatChat(msgs, 4, true, out.data(), 8, &n).ok());
  }
  EXPECT_FALSE(gemma.FormatChat(bad, 2, true, out.data(), out.size(), &n).ok());
  EXPECT_FALSE(none.FormatChat(msgs, 4, true, out.data(), out.size(), &n).ok());
  const staticlm_chat_message c_msgs[] = {{"system", "Be brief."}, {"user", " Hi "}};
  EXPECT_EQ(staticlm_chat_format(bare.get(), &info), STATICLM_INVALID_STATE);
  EXPECT_EQ(staticlm_format_chat(bare.get(), c_msgs, 2, 1, 0, out.data(), out.size(), &n),
            STATICLM_INVALID_STATE);
  EXPECT_EQ(staticlm_chat_format(forced.get(), &info), STATICLM_OK);
  EXPECT_EQ(staticlm_format_chat(forced.get(), c_msgs, 2, 1, 0, out.data(), out.size(), &n),
            STATICLM_OK);
  counter::Stop();
  char where[4096];
  counter::DescribeFirstEvent(where, sizeof(where));
  EXPECT_EQ(counter::Events(), 0u) << where;
  std::remove(path.c_str());
}

}  // namespace
