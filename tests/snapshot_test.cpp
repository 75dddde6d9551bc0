// Snapshots (prefix reuse): restoring a snapshot of a prefix gives bit for bit the logits that
// prefilling the prefix again gives, for the prefix and for whatever follows it; slots can be
// overwritten and restored any number of times; bad slots fail cleanly and change nothing.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/tokenizer/detokenizer.h"
#include "staticlm/staticlm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/context_helpers.h"

namespace {

using staticlm::test::ContextPtr;
using staticlm::test::CreateContext;
using staticlm::test::Logits;
using staticlm::test::Tokens;

ContextPtr Create(int32_t max_snapshots, int32_t max_context = 256, int32_t chunk = 16) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = max_context;
  limits.prefill_chunk = chunk;
  limits.max_snapshots = max_snapshots;
  return CreateContext(STATICLM_DEFAULT_MODEL, limits);
}

// Bitwise equality (memcmp), not float comparison: restore must not change a single bit.
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int32_t> Greedy(staticlm_context* ctx, int n) {
  staticlm_sampler greedy;
  staticlm_sampler_default(&greedy);
  greedy.temperature = 0.0f;
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    int32_t t = 0;
    EXPECT_EQ(staticlm_sample(ctx, &greedy, &t), STATICLM_OK);
    out.push_back(t);
    EXPECT_EQ(staticlm_decode(ctx, t), STATICLM_OK);
  }
  return out;
}

const char* kSystem =
    "<|im_start|>system\nYou are a terse assistant who answers questions about geography in "
    "one short sentence, and never says more than needed.<|im_end|>\n";
const char* kQuestion1 =
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
    "<|im_start|>assistant\n";
const char* kQuestion2 =
    "<|im_start|>user\nName a river in Egypt.<|im_end|>\n"
    "<|im_start|>assistant\n";

TEST(SnapshotTest, RestoreGivesTheSameLogitsAsPrefillingThePrefixAgain) {
  ContextPtr ctx = Create(1);
  ASSERT_NE(ctx, nullptr);
  std::vector<int32_t> prefix = Tokens(ctx.get(), kSystem);
  std::vector<int32_t> q1 = Tokens(ctx.get(), kQuestion1);
  std::vector<int32_t> q2 = Tokens(ctx.get(), kQuestion2);
  ASSERT_GT(prefix.size(), 16u);  // spans more than one prefill chunk

  // The reference: every conversation prefills the prefix itself.
  ASSERT_EQ(staticlm_prefill(ctx.get(), prefix.data(), prefix.size()), STATICLM_OK);
  std::vector<float> prefix_logits = Logits(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), q1.data(), q1.size()), STATICLM_OK);
  std::vector<float> q1_logits = Logits(ctx.get());
  std::vector<int32_t> q1_reply = Greedy(ctx.get(), 8);
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), prefix.data(), prefix.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx.get(), q2.data(), q2.size()), STATICLM_OK);
  std::vector<float> q2_logits = Logits(ctx.get());

  // Prefix once, snapshot, then two conversations that each start from the snapshot.
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), prefix.data(), prefix.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_snapshot_save(ctx.get(), 0), STATICLM_OK) << staticlm_last_error(ctx.get());
  // Another conversation overwrites the cache, the prefix's entries included.
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), q2.data(), q2.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx.get(), q1.data(), q1.size()), STATICLM_OK);
  Greedy(ctx.get(), 20);
  ASSERT_GT(staticlm_position(ctx.get()), static_cast<int32_t>(prefix.size()));

  ASSERT_EQ(staticlm_snapshot_restore(ctx.get(), 0), STATICLM_OK) << staticlm_last_error(ctx.get());
  EXPECT_EQ(staticlm_position(ctx.get()), static_cast<int32_t>(prefix.size()));
  EXPECT_TRUE(SameBits(Logits(ctx.get()), prefix_logits));
  size_t n_history = 0;
  const int32_t* history = staticlm_history(ctx.get(), &n_history);
  ASSERT_EQ(n_history, prefix.size());
  EXPECT_EQ(std::vector<int32_t>(history, history + n_history), prefix);
  ASSERT_EQ(staticlm_prefill(ctx.get(), q1.data(), q1.size()), STATICLM_OK);
  EXPECT_TRUE(SameBits(Logits(ctx.get()), q1_logits));
  EXPECT_EQ(Greedy(ctx.get(), 8), q1_reply);

  ASSERT_EQ(staticlm_snapshot_restore(ctx.get(), 0), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx.get(), q2.data(), q2.size()), STATICLM_OK);
  EXPECT_TRUE(SameBits(Logits(ctx.get()), q2_logits));
}

TEST(SnapshotTest, SlotsAreReusedAndIndependent) {
  ContextPtr ctx = Create(2);
  ASSERT_NE(ctx, nullptr);
  std::vector<int32_t> a = Tokens(ctx.get(), kSystem);
  std::vector<int32_t> b = Tokens(ctx.get(), kQuestion2);
  std::vector<int32_t> q = Tokens(ctx.get(), kQuestion1);

  // Reference logits after a + q and after b + q.
  ASSERT_EQ(staticlm_prefill(ctx.get(), a.data(), a.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx.get(), q.data(), q.size()), STATICLM_OK);
  std::vector<float> aq = Logits(ctx.get());
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), b.data(), b.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx.get(), q.data(), q.size()), STATICLM_OK);
  std::vector<float> bq = Logits(ctx.get());

  // Slot 0 first holds b, then is overwritten with a; slot 1 holds b.
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), b.data(), b.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_snapshot_save(ctx.get(), 0), STATICLM_OK);
  ASSERT_EQ(staticlm_snapshot_save(ctx.get(), 1), STATICLM_OK);
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), a.data(), a.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_snapshot_save(ctx.get(), 0), STATICLM_OK);
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(staticlm_snapshot_restore(ctx.get(), 1), STATICLM_OK);
    EXPECT_EQ(staticlm_position(ctx.get()), static_cast<int32_t>(b.size()));
    ASSERT_EQ(staticlm_prefill(ctx.get(), q.data(), q.size()), STATICLM_OK);
    EXPECT_TRUE(SameBits(Logits(ctx.get()), bq)) << "round " << round;
    ASSERT_EQ(staticlm_snapshot_restore(ctx.get(), 0), STATICLM_OK);
    EXPECT_EQ(staticlm_position(ctx.get()), static_cast<int32_t>(a.size()));
    ASSERT_EQ(staticlm_prefill(ctx.get(), q.data(), q.size()), STATICLM_OK);
    EXPECT_TRUE(SameBits(Logits(ctx.get()), aq)) << "round " << round;
  }
  // An empty conversation is a snapshot too: restoring it is a reset.
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_snapshot_save(ctx.get(), 1), STATICLM_OK);
  ASSERT_EQ(staticlm_prefill(ctx.get(), a.data(), a.size()), STATICLM_OK);
  ASSERT_EQ(staticlm_snapshot_restore(ctx.get(), 1), STATICLM_OK);
  EXPECT_EQ(staticlm_position(ctx.get()), 0);
  EXPECT_EQ(staticlm_logits(ctx.get()), nullptr);
}

TEST(SnapshotTest, BadSlotsFailAndChangeNothing) {
  ContextPtr ctx = Create(2);
  ASSERT_NE(ctx, nullptr);
  std::vector<int32_t> a = Tokens(ctx.get(), kSystem);
  ASSERT_EQ(staticlm_prefill(ctx.get(), a.data(), a.size()), STATICLM_OK);
  std::vector<float> before = Logits(ctx.get());
  EXPECT_EQ(staticlm_snapshot_save(ctx.get(), -1), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_snapshot_save(ctx.get(), 2), STATICLM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(staticlm_last_error(ctx.get())).find("max_snapshots"), std::string::npos);
  EXPECT_EQ(staticlm_snapshot_restore(ctx.get(), 2), STATICLM_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_snapshot_restore(ctx.get(), 1), STATICLM_INVALID_STATE);
  EXPECT_NE(std::string(staticlm_last_error(ctx.get())).find("empty"), std::string::npos);
  EXPECT_EQ(staticlm_position(ctx.get()), static_cast<int32_t>(a.size()));
  EXPECT_TRUE(SameBits(Logits(ctx.get()), before));

  ContextPtr none = Create(0);
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(staticlm_snapshot_save(none.get(), 0), STATICLM_INVALID_ARGUMENT);
}

TEST(SnapshotTest, SlotsAreSizedAtInitAndReported) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 256;
  staticlm_memory zero, two;
  char error[256];
  ASSERT_EQ(staticlm_plan_memory(STATICLM_DEFAULT_MODEL, &limits, &zero, error, sizeof(error)),
            STATICLM_OK);
  limits.max_snapshots = 2;
  ASSERT_EQ(staticlm_plan_memory(STATICLM_DEFAULT_MODEL, &limits, &two, error, sizeof(error)),
            STATICLM_OK);
  staticlm_model_info info;
  ContextPtr ctx = Create(2);
  ASSERT_NE(ctx, nullptr);
  staticlm_get_model_info(ctx.get(), &info);
  // Each slot holds the whole cache, the history and a row of logits.
  uint64_t slot = two.kv_cache_bytes + 256 * 4 + uint64_t(info.vocab_size) * 4;
  EXPECT_GE(two.snapshot_bytes - zero.snapshot_bytes, 2 * slot);
  EXPECT_LT(two.snapshot_bytes - zero.snapshot_bytes, 2 * slot + 1024);
  EXPECT_EQ(two.total_bytes - zero.total_bytes, two.snapshot_bytes - zero.snapshot_bytes);
  EXPECT_EQ(two.total_bytes, two.weights_bytes + two.kv_cache_bytes + two.arena_bytes +
                                 two.io_bytes + two.host_bytes + two.snapshot_bytes);
  staticlm_memory held;
  staticlm_get_memory(ctx.get(), &held);
  EXPECT_EQ(held.snapshot_bytes, two.snapshot_bytes);

  limits.max_snapshots = 65;
  EXPECT_EQ(staticlm_plan_memory(STATICLM_DEFAULT_MODEL, &limits, &two, error, sizeof(error)),
            STATICLM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("max_snapshots"), std::string::npos) << error;
}

// `chat --system` renders the system prompt alone, without its final newline (a continuation
// turn starts with it), then each user turn as a continuation: together they are exactly the
// text of rendering both at once.
TEST(SnapshotTest, SystemPromptAloneThenTurnRendersAsTheWholeConversation) {
  ContextPtr ctx = Create(0);
  ASSERT_NE(ctx, nullptr);
  staticlm_chat_message both[2] = {{"system", "You are terse."}, {"user", "Hi!"}};
  char whole[1024], parts[1024];
  size_t n_whole = 0, n_system = 0, n_user = 0;
  ASSERT_EQ(staticlm_format_chat(ctx.get(), both, 2, 1, 0, whole, sizeof(whole), &n_whole),
            STATICLM_OK);
  ASSERT_EQ(staticlm_format_chat(ctx.get(), both, 1, 0, 0, parts, sizeof(parts), &n_system),
            STATICLM_OK);
  ASSERT_EQ(parts[n_system - 1], '\n');
  --n_system;
  ASSERT_EQ(staticlm_format_chat(ctx.get(), both + 1, 1, 1, 1, parts + n_system,
                                 sizeof(parts) - n_system, &n_user),
            STATICLM_OK);
  EXPECT_EQ(std::string(parts, n_system + n_user), std::string(whole, n_whole));
}

// In `chat --system`, /reset restores the system prompt's snapshot: the next turn prefills only
// its own tokens and, greedy, replies exactly as the first turn did.
TEST(SnapshotTest, ChatResetRestoresTheSystemPrompt) {
  staticlm::test::CliResult r = staticlm::test::RunShell(
      "printf 'Hi!\\n/reset\\nHi!\\n' | timeout 300 " STATICLM_CLI
      " chat --system 'You are a terse assistant.' --max-tokens 8 --temperature 0 --ctx 256");
  const std::string& out = r.output;
  ASSERT_EQ(r.exit_code, 0) << out;
  EXPECT_NE(out.find("snapshotted"), std::string::npos) << out;
  EXPECT_NE(out.find("system prompt restored"), std::string::npos) << out;
  int prefilled[2] = {0, 0}, position[2] = {0, 0};
  for (int turn = 1; turn <= 2; ++turn) {
    std::string key = "turn " + std::to_string(turn) + ": prefilled ";
    size_t at = out.find(key);
    ASSERT_NE(at, std::string::npos) << out;
    prefilled[turn - 1] = std::atoi(out.c_str() + at + key.size());
    size_t pos = out.find("position ", at);
    ASSERT_NE(pos, std::string::npos) << out;
    position[turn - 1] = std::atoi(out.c_str() + pos + 9);
  }
  EXPECT_EQ(prefilled[0], prefilled[1]) << out;
  EXPECT_EQ(position[0], position[1]) << out;
  EXPECT_GT(position[0], prefilled[0]) << out;  // the system prompt came before the turn
  // The reply text of both turns (the lines after the "system prompt" line) is the same.
  size_t first = out.find("snapshotted\n");
  ASSERT_NE(first, std::string::npos) << out;
  size_t reply1_end = out.find('\n', first + 12);
  size_t reset = out.find("system prompt restored)\n");
  ASSERT_NE(reset, std::string::npos) << out;
  size_t reply2_end = out.find('\n', reset + 24);
  ASSERT_NE(reply1_end, std::string::npos) << out;
  ASSERT_NE(reply2_end, std::string::npos) << out;
  EXPECT_EQ(out.substr(first + 12, reply1_end - first - 12),
            out.substr(reset + 24, reply2_end - reset - 24))
      << out;
#ifndef STATICLM_SANITIZE
  EXPECT_NE(out.find(" heap_allocs_after_init=0 "), std::string::npos) << out;
#endif
}

// The detokenizer's held bytes travel with snapshots and sessions.
TEST(SnapshotTest, DetokenizerHeldBytesRoundTrip) {
  staticlm::Detokenizer d;
  const uint8_t euro_start[2] = {0xE2, 0x82};  // the first two bytes of "€"
  ASSERT_TRUE(d.RestorePending(euro_start, 2).ok());
  uint8_t held[staticlm::Detokenizer::kMaxPendingBytes] = {0, 0, 0};
  ASSERT_EQ(d.CopyPending(held), 2u);
  EXPECT_EQ(held[0], 0xE2);
  EXPECT_EQ(held[1], 0x82);
  char out[8];
  EXPECT_EQ(d.Flush(out, sizeof(out)), 3u);  // an unfinished character becomes U+FFFD
  const uint8_t ascii[1] = {'A'};
  const uint8_t broken[2] = {0xE2, 0x41};
  const uint8_t whole[3] = {0xE2, 0x82, 0xAC};
  EXPECT_FALSE(d.RestorePending(ascii, 1).ok());
  EXPECT_FALSE(d.RestorePending(broken, 2).ok());
  EXPECT_FALSE(d.RestorePending(whole, 3).ok());
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_TRUE(d.RestorePending(whole, 0).ok());
}

}  // namespace
