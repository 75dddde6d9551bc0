// The C API's NULL rule (include/staticlm/staticlm.h, "NULL arguments"): every call given a NULL
// context, or a NULL pointer it must read or write, answers STATICLM_INVALID_ARGUMENT with a
// message naming it (or does nothing and returns 0, -1, NULL or ""), and the context is as
// before: an embedder's mistake is an error status, never a crash.
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"

namespace {

constexpr staticlm_status kInvalid = STATICLM_INVALID_ARGUMENT;

// Whether the context's last error names `what` as NULL.
bool Names(const staticlm_context* context, const char* what) {
  const std::string message = staticlm_last_error(context);
  return message.find(what) != std::string::npos && message.find("NULL") != std::string::npos;
}

class CapiNullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    staticlm_limits limits;
    staticlm_limits_default(&limits);
    limits.max_context = 64;
    limits.max_batch = 2;
    limits.threads = 1;
    limits.max_snapshots = 1;
    owned_ = staticlm::test::CreateContext(STATICLM_DEFAULT_MODEL, limits);
    context_ = owned_.get();
    ASSERT_NE(context_, nullptr);
  }

  staticlm::test::ContextPtr owned_;
  staticlm_context* context_ = nullptr;
};

TEST(CapiNullContextTest, EveryRunPhaseCallRefusesANullContext) {
  staticlm_context* none = nullptr;
  const int32_t token = 1, sequence = 0;
  int32_t out_token = -7;
  size_t n = 99;
  char text[16];
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  const staticlm_chat_message message = {"user", "hi"};
  staticlm_chat_format_info format;
  EXPECT_STREQ(staticlm_last_error(none), "context is NULL");
  EXPECT_EQ(staticlm_tokenize(none, "a", 1, 0, &out_token, 1, &n), kInvalid);
  EXPECT_EQ(staticlm_token_piece(none, token, text, sizeof(text), &n), kInvalid);
  EXPECT_EQ(staticlm_format_chat(none, &message, 1, 1, 0, text, sizeof(text), &n), kInvalid);
  EXPECT_EQ(staticlm_set_chat_format(none, "chatml"), kInvalid);
  EXPECT_EQ(staticlm_chat_format(none, &format), kInvalid);
  EXPECT_EQ(staticlm_prefill(none, &token, 1), kInvalid);
  EXPECT_EQ(staticlm_decode(none, token), kInvalid);
  EXPECT_EQ(staticlm_sample(none, &sampler, &out_token), kInvalid);
  EXPECT_EQ(staticlm_token_to_text(none, token, text, sizeof(text), &n), kInvalid);
  EXPECT_EQ(staticlm_snapshot_save(none, 0), kInvalid);
  EXPECT_EQ(staticlm_snapshot_restore(none, 0), kInvalid);
  EXPECT_EQ(staticlm_session_save(none, "/tmp/x"), kInvalid);
  EXPECT_EQ(staticlm_session_load(none, "/tmp/x"), kInvalid);
  EXPECT_EQ(staticlm_seq_prefill(none, sequence, &token, 1), kInvalid);
  EXPECT_EQ(staticlm_decode_batch(none, &sequence, &token, 1), kInvalid);
  EXPECT_EQ(staticlm_seq_sample(none, sequence, &sampler, &out_token), kInvalid);
  EXPECT_EQ(staticlm_seq_seed(none, sequence, 1), kInvalid);
  EXPECT_EQ(staticlm_seq_reset(none, sequence), kInvalid);
  EXPECT_EQ(staticlm_seq_token_to_text(none, sequence, token, text, sizeof(text), &n), kInvalid);
  EXPECT_EQ(staticlm_seq_snapshot_save(none, sequence, 0), kInvalid);
  EXPECT_EQ(staticlm_seq_snapshot_restore(none, 0, sequence), kInvalid);
  EXPECT_EQ(staticlm_seq_session_save(none, sequence, "/tmp/x"), kInvalid);
  EXPECT_EQ(staticlm_seq_session_load(none, sequence, "/tmp/x"), kInvalid);
  EXPECT_EQ(out_token, -7);  // nothing was written

  // Calls without a status: nothing happens, and they say so in their return value.
  EXPECT_EQ(staticlm_logits(none), nullptr);
  EXPECT_EQ(staticlm_seq_logits(none, sequence), nullptr);
  EXPECT_EQ(staticlm_position(none), -1);
  EXPECT_EQ(staticlm_seq_position(none, sequence), -1);
  EXPECT_EQ(staticlm_history(none, &n), nullptr);
  EXPECT_EQ(n, 0u);
  n = 99;
  EXPECT_EQ(staticlm_seq_history(none, sequence, &n), nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(staticlm_flush_text(none, text, sizeof(text)), 0u);
  EXPECT_EQ(staticlm_seq_flush_text(none, sequence, text, sizeof(text)), 0u);
  EXPECT_EQ(staticlm_is_end_of_generation(none, token), 0);
  EXPECT_STREQ(staticlm_backend_name(none), "");
  EXPECT_STREQ(staticlm_backend_description(none), "");
  EXPECT_STREQ(staticlm_init_notes(none), "");
  EXPECT_EQ(staticlm_sync_seconds(none), 0.0);
  staticlm_memory memory;
  staticlm_model_info info;
  staticlm_step_cost cost;
  staticlm_get_memory(none, &memory);
  staticlm_get_model_info(none, &info);
  staticlm_step_cost_get(none, 1, 0, &cost);
  staticlm_seed(none, 1);
  staticlm_reset(none);
  staticlm_reset_sync_seconds(none);
  staticlm_reset_op_profile(none);
  staticlm_destroy(none);
}

TEST_F(CapiNullTest, NullInputsAndOutputsAreInvalidArgumentsThatChangeNothing) {
  const int32_t token = 1, sequence = 0;
  int32_t tokens[4];
  size_t n = 0;
  char text[16];
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);

  EXPECT_EQ(staticlm_tokenize(context_, "a b", 3, 0, tokens, 4, nullptr), kInvalid);
  EXPECT_TRUE(Names(context_, "n_tokens"));
  EXPECT_EQ(staticlm_tokenize(context_, "a b", 3, 0, nullptr, 4, &n), kInvalid);
  EXPECT_TRUE(Names(context_, "tokens"));
  EXPECT_EQ(staticlm_token_piece(context_, token, text, sizeof(text), nullptr), kInvalid);
  EXPECT_EQ(staticlm_token_piece(context_, token, nullptr, sizeof(text), &n), kInvalid);
  EXPECT_TRUE(Names(context_, "out"));
  EXPECT_EQ(staticlm_format_chat(context_, nullptr, 1, 1, 0, text, sizeof(text), &n), kInvalid);
  EXPECT_TRUE(Names(context_, "messages"));
  EXPECT_EQ(staticlm_chat_format(context_, nullptr), kInvalid);
  EXPECT_TRUE(Names(context_, "info"));
  EXPECT_EQ(staticlm_prefill(context_, nullptr, 1), kInvalid);
  EXPECT_TRUE(Names(context_, "tokens"));
  EXPECT_EQ(staticlm_sample(context_, nullptr, tokens), kInvalid);
  EXPECT_TRUE(Names(context_, "sampler"));
  EXPECT_EQ(staticlm_sample(context_, &sampler, nullptr), kInvalid);
  EXPECT_TRUE(Names(context_, "token"));
  EXPECT_EQ(staticlm_token_to_text(context_, token, text, sizeof(text), nullptr), kInvalid);
  EXPECT_EQ(staticlm_token_to_text(context_, token, nullptr, sizeof(text), &n), kInvalid);
  EXPECT_EQ(staticlm_session_save(context_, nullptr), kInvalid);
  EXPECT_TRUE(Names(context_, "path"));
  EXPECT_EQ(staticlm_session_load(context_, nullptr), kInvalid);
  EXPECT_EQ(staticlm_seq_session_save(context_, sequence, nullptr), kInvalid);
  EXPECT_EQ(staticlm_seq_session_load(context_, sequence, nullptr), kInvalid);
  EXPECT_EQ(staticlm_seq_prefill(context_, sequence, nullptr, 1), kInvalid);
  EXPECT_EQ(staticlm_decode_batch(context_, nullptr, &token, 1), kInvalid);
  EXPECT_TRUE(Names(context_, "sequences"));
  EXPECT_EQ(staticlm_decode_batch(context_, &sequence, nullptr, 1), kInvalid);
  EXPECT_EQ(staticlm_seq_sample(context_, sequence, &sampler, nullptr), kInvalid);
  EXPECT_EQ(staticlm_seq_token_to_text(context_, sequence, token, nullptr, 4, &n), kInvalid);
  EXPECT_EQ(staticlm_seq_token_to_text(context_, sequence, token, text, 4, nullptr), kInvalid);
  EXPECT_EQ(staticlm_flush_text(context_, nullptr, 4), 0u);
  EXPECT_EQ(staticlm_seq_flush_text(context_, sequence, nullptr, 4), 0u);
  EXPECT_EQ(staticlm_history(context_, nullptr), nullptr);
  EXPECT_EQ(staticlm_seq_history(context_, sequence, nullptr), nullptr);
  staticlm_get_memory(context_, nullptr);
  staticlm_get_model_info(context_, nullptr);
  staticlm_step_cost_get(context_, 1, 0, nullptr);

  // None of it touched the cache: the context decodes from position 0.
  EXPECT_EQ(staticlm_position(context_), 0);
  ASSERT_EQ(staticlm_decode(context_, token), STATICLM_OK) << staticlm_last_error(context_);
  EXPECT_EQ(staticlm_position(context_), 1);
  // A NULL buffer with capacity 0 is not refused for being NULL (too small a buffer may be).
  (void)staticlm_tokenize(context_, "a b", 3, 0, nullptr, 0, &n);
  EXPECT_FALSE(Names(context_, "tokens")) << staticlm_last_error(context_);
}

TEST(CapiNullInitTest, InitCallsRefuseNullsWithAMessage) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  char error[256] = {0};
  EXPECT_EQ(staticlm_create(STATICLM_DEFAULT_MODEL, &limits, nullptr, error, sizeof(error)),
            kInvalid);
  EXPECT_NE(std::strstr(error, "NULL"), nullptr) << error;
  staticlm_context* context = reinterpret_cast<staticlm_context*>(&limits);  // to be cleared
  error[0] = 0;
  EXPECT_EQ(staticlm_create(nullptr, &limits, &context, error, sizeof(error)), kInvalid);
  EXPECT_EQ(context, nullptr);
  EXPECT_NE(std::strstr(error, "NULL"), nullptr) << error;
  EXPECT_EQ(staticlm_create(STATICLM_DEFAULT_MODEL, nullptr, &context, error, sizeof(error)),
            kInvalid);
  staticlm_memory memory;
  EXPECT_EQ(staticlm_plan_memory(nullptr, &limits, &memory, error, sizeof(error)), kInvalid);
  EXPECT_EQ(staticlm_plan_memory(STATICLM_DEFAULT_MODEL, &limits, nullptr, error, sizeof(error)),
            kInvalid);
  EXPECT_EQ(staticlm_save_plan(STATICLM_DEFAULT_MODEL, &limits, nullptr, error, sizeof(error)),
            kInvalid);
  char out[64];
  size_t needed = 0;
  EXPECT_EQ(
      staticlm_plan_report(nullptr, &limits, 0, out, sizeof(out), &needed, error, sizeof(error)),
      kInvalid);
  EXPECT_EQ(staticlm_plan_report(STATICLM_DEFAULT_MODEL, &limits, 0, out, sizeof(out), nullptr,
                                 error, sizeof(error)),
            kInvalid);
  EXPECT_EQ(staticlm_describe_model(nullptr, out, sizeof(out), error, sizeof(error)), kInvalid);
  EXPECT_EQ(staticlm_describe_model(STATICLM_DEFAULT_MODEL, nullptr, 8, error, sizeof(error)),
            kInvalid);
  EXPECT_EQ(staticlm_cpu_isa(&limits, nullptr, 8, error, sizeof(error)), kInvalid);
  EXPECT_EQ(staticlm_list_devices(nullptr, 8, nullptr, error, sizeof(error)), kInvalid);
  EXPECT_EQ(staticlm_list_cuda_devices(nullptr, 8, nullptr, error, sizeof(error)), kInvalid);
  EXPECT_EQ(staticlm_fusion_pass(nullptr), 0u);
  staticlm_limits_default(nullptr);
  staticlm_sampler_default(nullptr);
}

}  // namespace
