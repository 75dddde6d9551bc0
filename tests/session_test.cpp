// Sessions on disk: a conversation saved and loaded back (in the same process, in a new context,
// and through the CLI in new processes) continues exactly as the uninterrupted run, greedy and
// with seeded sampling. Mismatched, truncated, corrupted or foreign files fail with a clear
// error and leave the context as it was. Writing is atomic: a failure or a crash mid-write
// leaves the old file whole.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/session/session_file.h"
#include "staticlm/staticlm.h"
#include "tests/support/cli_runner.h"
#include "tests/support/context_helpers.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace {

using staticlm::test::ContextPtr;
using staticlm::test::CreateContext;
using staticlm::test::Logits;
using staticlm::test::TempPath;
using staticlm::test::Tokens;

ContextPtr Create(const std::string& model, int32_t max_context, int32_t chunk) {
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = max_context;
  limits.prefill_chunk = chunk;
  return CreateContext(model.c_str(), limits);
}

std::vector<int32_t> History(staticlm_context* ctx) {
  size_t n = 0;
  const int32_t* h = staticlm_history(ctx, &n);
  return std::vector<int32_t>(h, h + n);
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

staticlm_sampler Sampler(bool greedy) {
  staticlm_sampler s;
  staticlm_sampler_default(&s);
  if (greedy) {
    s.temperature = 0.0f;
  } else {
    s.temperature = 0.9f;
    s.repetition_penalty = 1.2f;  // reads the history, which the session must carry
  }
  return s;
}

// Samples and decodes n tokens, as a generation loop does.
std::vector<int32_t> Generate(staticlm_context* ctx, const staticlm_sampler& s, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    int32_t t = 0;
    EXPECT_EQ(staticlm_sample(ctx, &s, &t), STATICLM_OK) << staticlm_last_error(ctx);
    out.push_back(t);
    EXPECT_EQ(staticlm_decode(ctx, t), STATICLM_OK) << staticlm_last_error(ctx);
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Files in the directory of `path` whose names start with its name followed by ".tmp".
int LeftoverTemporaries(const std::string& path) {
  std::string dir = path.substr(0, path.rfind('/'));
  std::string prefix = path.substr(path.rfind('/') + 1) + ".tmp";
  int count = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) ++count;
  }
  closedir(d);
  return count;
}

const char* kPrompt = "The three most useful things to pack for a long hike are";

class SessionContinuationTest : public ::testing::TestWithParam<bool> {};

// 16 tokens, save, then in a new context: load and 16 more == the same 32 in one run.
TEST_P(SessionContinuationTest, LoadedSessionContinuesLikeTheUninterruptedRun) {
  const bool greedy = GetParam();
  const staticlm_sampler sampler = Sampler(greedy);
  std::string path = TempPath("continue.session");
  ContextPtr first = Create(STATICLM_DEFAULT_MODEL, 256, 16);
  ASSERT_NE(first, nullptr);
  staticlm_seed(first.get(), 11);
  std::vector<int32_t> prompt = Tokens(first.get(), kPrompt);
  ASSERT_EQ(staticlm_prefill(first.get(), prompt.data(), prompt.size()), STATICLM_OK);
  std::vector<int32_t> head = Generate(first.get(), sampler, 16);
  std::vector<float> saved_logits = Logits(first.get());
  ASSERT_EQ(staticlm_session_save(first.get(), path.c_str()), STATICLM_OK)
      << staticlm_last_error(first.get());
  std::vector<int32_t> tail = Generate(first.get(), sampler, 16);  // the uninterrupted run

  ContextPtr second = Create(STATICLM_DEFAULT_MODEL, 256, 16);
  ASSERT_NE(second, nullptr);
  staticlm_seed(second.get(), 999);  // the session's random state replaces this
  ASSERT_EQ(staticlm_session_load(second.get(), path.c_str()), STATICLM_OK)
      << staticlm_last_error(second.get());
  EXPECT_EQ(staticlm_position(second.get()), static_cast<int32_t>(prompt.size() + 16));
  std::vector<int32_t> expected_history = prompt;
  expected_history.insert(expected_history.end(), head.begin(), head.end());
  EXPECT_EQ(History(second.get()), expected_history);
  EXPECT_TRUE(SameBits(Logits(second.get()), saved_logits));
  EXPECT_EQ(Generate(second.get(), sampler, 16), tail);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSampled, SessionContinuationTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Greedy" : "SeededSampling";
                         });

// The "tokens" array and "text" string of `staticlm run --json` output.
std::vector<int> JsonTokens(const std::string& out) {
  std::vector<int> tokens;
  size_t at = out.find("\"tokens\": [");
  if (at == std::string::npos) return tokens;
  const char* p = out.c_str() + at + 11;
  while (*p != ']' && *p != '\0') {
    char* end = nullptr;
    tokens.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  return tokens;
}

std::string JsonText(const std::string& out) {
  size_t at = out.find("\"text\": \"");
  if (at == std::string::npos) return "<none>";
  std::string text;
  for (size_t i = at + 9; i < out.size() && out[i] != '"'; ++i) {
    text += out[i];
    if (out[i] == '\\' && i + 1 < out.size()) text += out[++i];
  }
  return text;
}

class SessionCliTest : public ::testing::TestWithParam<bool> {};

TEST_P(SessionCliTest, SixteenSaveLoadSixteenEqualsThirtyTwo) {
  std::string sampling = GetParam() ? " --temperature 0" : " --temperature 0.9 --seed 1";
  std::string common = " --ctx 256 --json --prompt '" + std::string(kPrompt) + "'" + sampling;
  std::string path = TempPath("cli.session");
  staticlm::test::CliResult whole = staticlm::test::RunCli("run -n 32" + common);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  staticlm::test::CliResult head =
      staticlm::test::RunCli("run -n 16 --save-session " + path + common);
  ASSERT_EQ(head.exit_code, 0) << head.output;
  // A new process; no prompt: continue the saved generation.
  staticlm::test::CliResult tail = staticlm::test::RunCli(
      "run -n 16 --ctx 256 --json --load-session " + path + sampling + " --seed 12345");
  ASSERT_EQ(tail.exit_code, 0) << tail.output;

  std::vector<int> expected = JsonTokens(whole.output);
  ASSERT_EQ(expected.size(), 32u) << whole.output;  // this prompt and seed run the full 32
  std::vector<int> joined = JsonTokens(head.output);
  std::vector<int> rest = JsonTokens(tail.output);
  joined.insert(joined.end(), rest.begin(), rest.end());
  EXPECT_EQ(joined, expected) << head.output << "\n" << tail.output;
  EXPECT_EQ(JsonText(head.output) + JsonText(tail.output), JsonText(whole.output));
#ifndef STATICLM_SANITIZE
  // Loading and saving are part of the run phase: no heap use.
  EXPECT_NE(head.output.find("\"heap_allocs_after_init\": 0"), std::string::npos) << head.output;
  EXPECT_NE(tail.output.find("\"heap_allocs_after_init\": 0"), std::string::npos) << tail.output;
#endif

  // With a prompt, a loaded chat continues as its next turn.
  staticlm::test::CliResult turn = staticlm::test::RunCli(
      "run -n 4 --ctx 256 --json --chat --load-session " + path + " --prompt 'And why?'");
  EXPECT_EQ(turn.exit_code, 0) << turn.output;
  EXPECT_GT(JsonTokens(turn.output).size(), 0u) << turn.output;
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSampled, SessionCliTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Greedy" : "SeededSampling";
                         });

// Every cache policy: rings that have wrapped (positions past max_context, evicted entries),
// sinks, quantized caches. A session saved after eviction, loaded into a new context, and a
// snapshot restored after the cache was overwritten, both continue exactly as the original.
struct CacheMode {
  const char* name;
  staticlm_kv_type kv;
  int32_t context, window, sinks;
};

class SessionCachePolicyTest : public ::testing::TestWithParam<CacheMode> {};

TEST_P(SessionCachePolicyTest, SessionsAndSnapshotsContinueExactly) {
  const CacheMode& mode = GetParam();
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = mode.context;
  limits.prefill_chunk = 16;
  limits.kv_type = mode.kv;
  limits.window = mode.window;
  limits.sinks = mode.sinks;
  limits.max_snapshots = 1;
  auto create = [&]() {
    staticlm_context* raw = nullptr;
    char error[256] = {0};
    EXPECT_EQ(staticlm_create(STATICLM_DEFAULT_MODEL, &limits, &raw, error, sizeof(error)),
              STATICLM_OK)
        << error;
    return ContextPtr(raw);
  };
  ContextPtr ctx = create();
  ASSERT_NE(ctx, nullptr);
  std::string text;
  for (int i = 0; i < 6; ++i) {
    text += "Rivers carry water from the mountains to the sea, and towns grow on their banks. ";
  }
  std::vector<int32_t> long_text = Tokens(ctx.get(), text);
  ASSERT_GT(long_text.size(), 100u);
  const staticlm_sampler sampler = Sampler(false);
  staticlm_seed(ctx.get(), 21);
  ASSERT_EQ(staticlm_prefill(ctx.get(), long_text.data(), long_text.size()), STATICLM_OK)
      << staticlm_last_error(ctx.get());
  Generate(ctx.get(), sampler, 4);
  if (mode.window > 0) {
    ASSERT_GT(staticlm_position(ctx.get()), mode.context);  // the rings have wrapped
  }
  std::string path = TempPath(std::string(mode.name) + ".session");
  ASSERT_EQ(staticlm_session_save(ctx.get(), path.c_str()), STATICLM_OK)
      << staticlm_last_error(ctx.get());
  ASSERT_EQ(staticlm_snapshot_save(ctx.get(), 0), STATICLM_OK);
  const int32_t position = staticlm_position(ctx.get());
  const std::vector<int32_t> history = History(ctx.get());
  const std::vector<float> logits = Logits(ctx.get());
  staticlm_seed(ctx.get(), 77);
  const std::vector<int32_t> expected = Generate(ctx.get(), Sampler(true), 8);

  ContextPtr loaded = create();
  ASSERT_NE(loaded, nullptr);
  ASSERT_EQ(staticlm_session_load(loaded.get(), path.c_str()), STATICLM_OK)
      << staticlm_last_error(loaded.get());
  EXPECT_EQ(staticlm_position(loaded.get()), position);
  EXPECT_EQ(History(loaded.get()), history);
  EXPECT_TRUE(SameBits(Logits(loaded.get()), logits));
  EXPECT_EQ(Generate(loaded.get(), Sampler(true), 8), expected);

  // Overwrite the whole cache with another conversation, then restore the snapshot.
  staticlm_reset(ctx.get());
  ASSERT_EQ(staticlm_prefill(ctx.get(), long_text.data() + 7, long_text.size() - 7), STATICLM_OK);
  ASSERT_EQ(staticlm_snapshot_restore(ctx.get(), 0), STATICLM_OK) << staticlm_last_error(ctx.get());
  EXPECT_EQ(staticlm_position(ctx.get()), position);
  EXPECT_EQ(History(ctx.get()), history);
  EXPECT_TRUE(SameBits(Logits(ctx.get()), logits));
  EXPECT_EQ(Generate(ctx.get(), Sampler(true), 8), expected);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Modes, SessionCachePolicyTest,
                         ::testing::Values(CacheMode{"window", STATICLM_KV_F16, 96, 48, 0},
                                           CacheMode{"sinks", STATICLM_KV_F16, 96, 48, 4},
                                           CacheMode{"q8", STATICLM_KV_Q8, 256, 0, 0},
                                           CacheMode{"q4", STATICLM_KV_Q4, 256, 0, 0},
                                           CacheMode{"window_q4", STATICLM_KV_Q4, 96, 48, 0},
                                           CacheMode{"sinks_q4", STATICLM_KV_Q4, 96, 48, 4},
                                           CacheMode{"f32", STATICLM_KV_F32, 256, 0, 0}),
                         [](const auto& info) { return std::string(info.param.name); });

// Bad files against a context on a tiny model (fast), each checked to leave it untouched.
class SessionBadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = TempPath("session_tiny.gguf");
    ASSERT_TRUE(staticlm::test::WriteTinyLlama(model_.c_str()).ok());
    good_ = TempPath("good.session");
    ctx_ = Create(model_, 64, 8);
    ASSERT_NE(ctx_, nullptr);
    staticlm_seed(ctx_.get(), 3);
    std::vector<int32_t> prompt = Tokens(ctx_.get(), "hello world, a test of sessions");
    ASSERT_EQ(staticlm_prefill(ctx_.get(), prompt.data(), prompt.size()), STATICLM_OK);
    Generate(ctx_.get(), Sampler(false), 4);
    ASSERT_EQ(staticlm_session_save(ctx_.get(), good_.c_str()), STATICLM_OK)
        << staticlm_last_error(ctx_.get());
    position_ = staticlm_position(ctx_.get());
    history_ = History(ctx_.get());
    logits_ = Logits(ctx_.get());
  }
  void TearDown() override {
    for (const std::string& p : cleanup_) std::remove(p.c_str());
    std::remove(good_.c_str());
    std::remove(model_.c_str());
  }

  std::string Variant(const std::string& name, const std::string& bytes) {
    std::string path = TempPath(name);
    WriteFile(path, bytes);
    cleanup_.push_back(path);
    return path;
  }

  // Loading `path` fails with `code` and a message containing `expected`, and changes nothing.
  void ExpectRejected(const std::string& path, staticlm_status code, const std::string& expected) {
    EXPECT_EQ(staticlm_session_load(ctx_.get(), path.c_str()), code) << path;
    std::string message = staticlm_last_error(ctx_.get());
    EXPECT_NE(message.find(expected), std::string::npos)
        << "expected '" << expected << "' in: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(staticlm_position(ctx_.get()), position_);
    EXPECT_EQ(History(ctx_.get()), history_);
    EXPECT_TRUE(SameBits(Logits(ctx_.get()), logits_));
  }

  std::string model_, good_;
  ContextPtr ctx_;
  int32_t position_ = 0;
  std::vector<int32_t> history_;
  std::vector<float> logits_;
  std::vector<std::string> cleanup_;
};

TEST_F(SessionBadFileTest, DamagedFilesAreRejectedAndTheContextStillWorks) {
  std::string good = ReadFile(good_);
  ASSERT_GT(good.size(), 400u);
  ExpectRejected(TempPath("missing.session"), STATICLM_IO_ERROR, "cannot open");
  ExpectRejected(Variant("empty.session", ""), STATICLM_FORMAT_ERROR, "truncated");
  ExpectRejected(Variant("short.session", good.substr(0, 100)), STATICLM_FORMAT_ERROR, "truncated");
  ExpectRejected(Variant("half.session", good.substr(0, good.size() / 2)), STATICLM_FORMAT_ERROR,
                 "truncated");
  ExpectRejected(Variant("long.session", good + "x"), STATICLM_FORMAT_ERROR, "extended");
  for (size_t at : {good.size() - 1, good.size() / 2, size_t{200}}) {
    std::string flipped = good;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
    ExpectRejected(Variant("flipped.session", flipped), STATICLM_FORMAT_ERROR, "checksum mismatch");
  }
  std::string header_flip = good;
  header_flip[60] = static_cast<char>(header_flip[60] ^ 0x01);
  ExpectRejected(Variant("header.session", header_flip), STATICLM_FORMAT_ERROR,
                 "header is corrupted");
  std::string version = good;
  version[8] = 2;  // the format version field
  ExpectRejected(Variant("version.session", version), STATICLM_UNSUPPORTED, "format version 2");
  ExpectRejected(Variant("magic.session", "GGUF" + good.substr(4)), STATICLM_FORMAT_ERROR,
                 "not a staticlm session file");
  ExpectRejected(model_, STATICLM_FORMAT_ERROR, "not a staticlm session file");

  // After all that, the conversation goes on exactly as a fresh load of the good file does
  // (including the random state, which no failed load touched).
  std::vector<int32_t> next = Generate(ctx_.get(), Sampler(false), 6);
  ContextPtr other = Create(model_, 64, 8);
  ASSERT_EQ(staticlm_session_load(other.get(), good_.c_str()), STATICLM_OK);
  EXPECT_EQ(Generate(other.get(), Sampler(false), 6), next);
}

// `file` with its payload checksum recomputed, as a writer that stored bad values would make it.
std::string WithValidChecksums(std::string file) {
  uint8_t* bytes = reinterpret_cast<uint8_t*>(file.data());
  staticlm::SessionHeader h;
  EXPECT_TRUE(staticlm::DecodeSessionHeader(bytes, &h).ok());
  staticlm::StreamChecksum checksum;
  checksum.Add(bytes + staticlm::kSessionHeaderBytes, file.size() - staticlm::kSessionHeaderBytes);
  h.payload_checksum = checksum.value();
  staticlm::EncodeSessionHeader(h, bytes);
  return file;
}

// Checksums prove a file arrived as written, not that what was written can run: NaN or infinite
// cache values and logits would poison every later step, so the load refuses them.
TEST_F(SessionBadFileTest, NonFiniteValuesAreRejectedEvenWithValidChecksums) {
  const std::string good = ReadFile(good_);
  const uint16_t half_nan = 0x7E00, half_inf = 0x7C00;
  for (uint16_t bad : {half_nan, half_inf}) {
    std::string file = good;  // the last F16 cache element of the conversation
    std::memcpy(&file[file.size() - sizeof(bad)], &bad, sizeof(bad));
    ExpectRejected(Variant("nan_cache.session", WithValidChecksums(file)), STATICLM_FORMAT_ERROR,
                   "not finite");
  }
  // Logits follow the header and max_context (64) history ids.
  const size_t logits_at = staticlm::kSessionHeaderBytes + 64 * sizeof(int32_t);
  std::string file = good;
  const float inf = INFINITY;
  std::memcpy(&file[logits_at + 5 * sizeof(float)], &inf, sizeof(inf));
  ExpectRejected(Variant("inf_logits.session", WithValidChecksums(file)), STATICLM_FORMAT_ERROR,
                 "logits are not finite");
  // The unchanged file with recomputed checksums still loads: the check is on values only.
  EXPECT_EQ(
      staticlm_session_load(ctx_.get(), Variant("same.session", WithValidChecksums(good)).c_str()),
      STATICLM_OK)
      << staticlm_last_error(ctx_.get());
}

TEST_F(SessionBadFileTest, SessionsOfOtherModelsAndPlansAreRejected) {
  // Same shapes, other weights: only the fingerprint tells them apart.
  std::string other_model = TempPath("session_tiny2.gguf");
  staticlm::test::TinyLlamaOptions options;
  options.seed = 2;
  ASSERT_TRUE(staticlm::test::WriteTinyLlama(other_model.c_str(), options).ok());
  cleanup_.push_back(other_model);
  std::string foreign = TempPath("foreign.session");
  cleanup_.push_back(foreign);
  {
    ContextPtr other = Create(other_model, 64, 8);
    ASSERT_EQ(staticlm_session_save(other.get(), foreign.c_str()), STATICLM_OK);
  }
  ExpectRejected(foreign, STATICLM_INVALID_ARGUMENT, "another model");

  // Same model, other plans: another context size, another prefill chunk.
  for (auto [ctx_size, chunk] : {std::pair{128, 8}, std::pair{64, 4}}) {
    std::string path = TempPath("plan.session");
    cleanup_.push_back(path);
    ContextPtr other = Create(model_, ctx_size, chunk);
    ASSERT_EQ(staticlm_session_save(other.get(), path.c_str()), STATICLM_OK);
    ExpectRejected(path, STATICLM_INVALID_ARGUMENT, "another plan");
    // And the other way round: this context's file in that context.
    EXPECT_EQ(staticlm_session_load(other.get(), good_.c_str()), STATICLM_INVALID_ARGUMENT);
  }
  // Same model and sizes, another cache policy (a sliding window).
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  limits.prefill_chunk = 8;
  limits.window = 32;
  staticlm_context* raw = nullptr;
  char error[256] = {0};
  ASSERT_EQ(staticlm_create(model_.c_str(), &limits, &raw, error, sizeof(error)), STATICLM_OK)
      << error;
  ContextPtr windowed(raw);
  std::string path = TempPath("window.session");
  cleanup_.push_back(path);
  ASSERT_EQ(staticlm_session_save(windowed.get(), path.c_str()), STATICLM_OK);
  ExpectRejected(path, STATICLM_INVALID_ARGUMENT, "another cache policy");

  std::vector<int32_t> next = Generate(ctx_.get(), Sampler(true), 4);
  EXPECT_EQ(next.size(), 4u);
}

TEST_F(SessionBadFileTest, CliReportsBadSessionsInOneLine) {
  std::string good = ReadFile(good_);
  std::string truncated = Variant("cli_trunc.session", good.substr(0, good.size() - 10));
  staticlm::test::ExpectCleanFailure(
      "run --model " + model_ + " --ctx 64 --chunk 8 -n 2 --load-session " + truncated,
      "truncated");
  staticlm::test::ExpectCleanFailure(
      "run --model " + model_ + " --ctx 128 --chunk 8 -n 2 --load-session " + good_,
      "another plan");
  staticlm::test::ExpectCleanFailure("run --model " + model_ +
                                         " --ctx 64 --chunk 8 -n 2 --json --save-session "
                                         "/nonexistent-dir/x.session",
                                     "cannot write");
  // The good file continues the generation through the CLI.
  staticlm::test::CliResult ok = staticlm::test::RunCli(
      "run --model " + model_ + " --ctx 64 --chunk 8 -n 2 --json --load-session " + good_);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// A save that fails mid-write (the file size limit stands in for a full disk) leaves the old
// file whole and no temporary behind.
TEST_F(SessionBadFileTest, FailedWriteLeavesTheOldFileWhole) {
  std::string before = ReadFile(good_);
  Generate(ctx_.get(), Sampler(true), 3);  // a different conversation to save
  struct rlimit old_limit;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ignore = {}, old_action = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &old_action), 0);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  staticlm_status s = staticlm_session_save(ctx_.get(), good_.c_str());
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  sigaction(SIGXFSZ, &old_action, nullptr);
  EXPECT_EQ(s, STATICLM_IO_ERROR);
  EXPECT_NE(std::string(staticlm_last_error(ctx_.get())).find("cannot write"), std::string::npos)
      << staticlm_last_error(ctx_.get());
  EXPECT_EQ(ReadFile(good_), before);
  EXPECT_EQ(LeftoverTemporaries(good_), 0);

  // A rename that fails (the path is a directory) also leaves nothing behind.
  std::string dir = TempPath("a_directory.session");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  EXPECT_EQ(staticlm_session_save(ctx_.get(), dir.c_str()), STATICLM_IO_ERROR);
  EXPECT_NE(std::string(staticlm_last_error(ctx_.get())).find("cannot replace"), std::string::npos)
      << staticlm_last_error(ctx_.get());
  EXPECT_EQ(LeftoverTemporaries(dir), 0);
  rmdir(dir.c_str());

  // A successful save replaces the file whole, and it loads.
  ASSERT_EQ(staticlm_session_save(ctx_.get(), good_.c_str()), STATICLM_OK);
  EXPECT_NE(ReadFile(good_), before);
  EXPECT_EQ(staticlm_session_load(ctx_.get(), good_.c_str()), STATICLM_OK);
}

// A process killed in the middle of writing (SIGXFSZ's default action kills it when a write
// crosses the size limit) leaves the old file whole: the half-written bytes are only ever in
// the temporary file.
TEST_F(SessionBadFileTest, CrashMidWriteLeavesTheOldFileWhole) {
  std::string before = ReadFile(good_);
  Generate(ctx_.get(), Sampler(true), 3);
  fflush(nullptr);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_DFL);
    struct rlimit small = {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &small);
    staticlm_session_save(ctx_.get(), good_.c_str());
    _exit(0);  // not reached: the save crosses the limit
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child was meant to die mid-write";
  EXPECT_EQ(WTERMSIG(status), SIGXFSZ);
  EXPECT_EQ(ReadFile(good_), before);
  EXPECT_EQ(staticlm_session_load(ctx_.get(), good_.c_str()), STATICLM_OK);
  std::string leftover = good_ + ".tmp" + std::to_string(child);
  EXPECT_LE(ReadFile(leftover).size(), 4096u);
  std::remove(leftover.c_str());
}

}  // namespace
