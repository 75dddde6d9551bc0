// With int8 activations the CPU backend repacks the matrices its products read into planned
// memory (backends/cpu/packed_weights.h) and pages out the file's copy of each one nothing else
// reads, so the process does not hold those weights twice. SmolLM2: the 210 Q4_1 layer matrices
// (66,355,200 bytes in the file) are paged out; its Q8_0 head stays resident, since the
// embedding reads the same tensor (tied). The file's resident pages grow by less than the
// whole file's weights after init and a step: without the page-out they grow by all of them
// (every packed matrix was read to pack it). Memory pressure can only make the figure smaller.
// The model is a private copy: the kernel does not page out a page another process maps too,
// and other tests map the default model beside this one.
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "platform/process_stats.h"
#include "staticlm/staticlm.h"
#include "tests/support/context_helpers.h"
#include "tests/support/disk_file.h"

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

uint64_t FileRssBytes() {
  return staticlm::CurrentRssBytes() - staticlm::NonFileRssBytes();
}

TEST(PackedWeightsResidencyTest, PackedLayerWeightsLeaveTheFileResidentSet) {
  if (!staticlm::test::HaveDefaultModel()) {
    GTEST_SKIP() << "no model at " << STATICLM_DEFAULT_MODEL;
  }
  if (staticlm::CurrentRssBytes() == 0) GTEST_SKIP() << "no /proc/self/status here";
  const char* skip_reason = "";
  const std::string model =
      staticlm::test::CopyToPrivateDiskFile(STATICLM_DEFAULT_MODEL, &skip_reason);
  if (model.empty()) GTEST_SKIP() << skip_reason;
  staticlm_limits limits;
  staticlm_limits_default(&limits);
  limits.max_context = 64;
  limits.activation_bits = 8;
  const uint64_t before = FileRssBytes();
  staticlm::test::ContextPtr ctx = staticlm::test::CreateContext(model.c_str(), limits);
  unlink(model.c_str());  // the mapping keeps it
  ASSERT_NE(ctx, nullptr);
  const std::string description = staticlm_backend_description(ctx.get());
  if (description.find("matrices packed") == std::string::npos) {
    GTEST_SKIP() << "this CPU's integer kernels read the file layout: " << description;
  }
  ASSERT_EQ(staticlm_decode(ctx.get(), 1), STATICLM_OK);
  const uint64_t growth = FileRssBytes() - before;
  staticlm_memory memory;
  staticlm_get_memory(ctx.get(), &memory);
  std::printf("weights %.1f MiB, packed %.1f MiB; the file's resident pages grew by %.1f MiB\n",
              memory.weights_bytes / kMiB, memory.packed_weights_bytes / kMiB, growth / kMiB);
  ASSERT_GT(memory.packed_weights_bytes, memory.weights_bytes / 2) << description;
  // Resident: the head (28.7 MiB), norms and metadata; paged out: 63.3 MiB of layers.
  EXPECT_LT(growth, memory.weights_bytes - 48 * 1024 * 1024) << description;
}

}  // namespace
