// libFuzzer target: the session-file loader (staticlm_session_load; runtime/session and the
// engine's checks). Two contexts of the tiny model (fuzz_inputs.h: a static f16 cache, and a
// window with sinks over a q8 cache) are made once; each input is written to a scratch file and
// loaded into one of them. A load that succeeds must leave a context that decodes and samples;
// one that fails must leave it usable too (it is reset and decoded after every input).
//
// Input: byte 0 picks the context (bit 7) and holds repair bits (fuzz_inputs.h): with
// kRepairChecksums the header's and payload's checksums are fixed, with kRepairFingerprint the
// model's fingerprint is written, so mutations reach the checks behind them. The rest is the
// file. Seeds: sessions saved from both contexts (make_fuzz_seeds) and their prefixes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/model/model_hash.h"
#include "staticlm/staticlm.h"
#include "tests/fuzz/fuzz_inputs.h"

namespace {

using namespace staticlm;

constexpr uint8_t kSecondContext = 0x80;

struct Fixture {
  staticlm_context* contexts[fuzz::kSessionContextKinds] = {};
  uint64_t fingerprint = 0;
  std::string session_path;
};

Fixture* g_fixture = nullptr;

// After any load, good or bad, the context must still run: one token decoded and sampled.
void CheckUsable(staticlm_context* context) {
  staticlm_sampler sampler;
  staticlm_sampler_default(&sampler);
  int32_t token = -1;
  staticlm_status s = staticlm_decode(context, 1);
  if (s == STATICLM_OK) s = staticlm_sample(context, &sampler, &token);
  if (s != STATICLM_OK && s != STATICLM_CONTEXT_FULL) {
    std::fprintf(stderr, "session_fuzz: a context cannot run after a load (%d): %s\n",
                 static_cast<int>(s), staticlm_last_error(context));
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  static Fixture fixture;
  g_fixture = &fixture;
  const std::string model = fuzz::ScratchPath("model.gguf");
  fuzz::WriteFuzzModel(model);
  std::vector<uint8_t> bytes = fuzz::ReadFileBytes(model);
  fixture.fingerprint = FingerprintBytes(bytes.data(), bytes.size());
  for (int k = 0; k < fuzz::kSessionContextKinds; ++k) {
    staticlm_limits limits = fuzz::SessionLimits(k);
    char error[256] = {0};
    staticlm_status s =
        staticlm_create(model.c_str(), &limits, &fixture.contexts[k], error, sizeof(error));
    if (s != STATICLM_OK) std::fprintf(stderr, "session_fuzz: %s\n", error);
    fuzz::Require(s, "staticlm_create of the tiny model");
  }
  fixture.session_path = fuzz::ScratchPath("session");
  std::atexit([] {
    std::remove(g_fixture->session_path.c_str());
    for (staticlm_context* c : g_fixture->contexts) staticlm_destroy(c);
  });
  std::remove(model.c_str());  // the contexts keep it mapped
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  staticlm_context* context = g_fixture->contexts[(data[0] & kSecondContext) ? 1 : 0];
  std::vector<uint8_t> file(data + 1, data + size);
  fuzz::RepairSessionFile(data[0], g_fixture->fingerprint, &file);
  fuzz::WriteFileBytes(g_fixture->session_path, file.data(), file.size());
  (void)staticlm_session_load(context, g_fixture->session_path.c_str());
  CheckUsable(context);
  staticlm_reset(context);
  return 0;
}
