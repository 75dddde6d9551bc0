// Sequences (runtime/engine/sequences.h) on its own: histories as rings, logits left in the io
// buffer with one sequence and copied per sequence with several, and Reset.
#include "runtime/engine/sequences.h"

#include <gtest/gtest.h>

#include <vector>

namespace staticlm {
namespace {

Sequences::Shape MakeShape(int32_t count, int32_t max_context, int32_t vocab, bool ring) {
  Sequences::Shape shape;
  shape.count = count;
  shape.max_context = max_context;
  shape.vocab = vocab;
  shape.ring = ring;
  return shape;
}

TEST(EngineSequencesTest, HistoryIsInOrderBeforeAndAfterTheRingWraps) {
  std::vector<float> io(4, 0.0f);
  Sequences seqs;
  ASSERT_TRUE(seqs.Allocate(MakeShape(1, 4, 4, true), io.data()).ok());
  const int32_t first[3] = {10, 11, 12};
  seqs.Record(0, first, 3, {1, 1, 0, false});
  size_t n = 0;
  const int32_t* h = seqs.History(0, &n);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(std::vector<int32_t>(h, h + n), (std::vector<int32_t>{10, 11, 12}));
  // Three more: positions 3, 4, 5; the ring of 4 keeps 12 … 15, oldest first.
  const int32_t more[3] = {13, 14, 15};
  seqs.Record(0, more, 3, {2, 1, 0, false});
  h = seqs.History(0, &n);
  ASSERT_EQ(n, 4u);
  EXPECT_EQ(std::vector<int32_t>(h, h + n), (std::vector<int32_t>{12, 13, 14, 15}));
  EXPECT_EQ(seqs.at(0).position, 6);
}

TEST(EngineSequencesTest, OneSequenceLeavesItsLogitsInTheIoBuffer) {
  std::vector<float> io = {1.0f, 2.0f, 3.0f};
  Sequences seqs;
  ASSERT_TRUE(seqs.Allocate(MakeShape(1, 8, 3, false), io.data()).ok());
  EXPECT_EQ(seqs.logits(0), io.data());
  const int32_t token = 5;
  seqs.Record(0, &token, 1, {7, 0, 0, true});
  const Sequence& q = seqs.at(0);
  EXPECT_TRUE(q.have_logits);
  EXPECT_EQ(q.logits_step, 7u);
  EXPECT_TRUE(q.host_stale);  // only on the device until fetched
}

TEST(EngineSequencesTest, SeveralSequencesCopyTheirOwnIoRow) {
  // Two io rows of a vocabulary of 2: row 0 {1, 2}, row 1 {3, 4}.
  std::vector<float> io = {1.0f, 2.0f, 3.0f, 4.0f};
  Sequences seqs;
  ASSERT_TRUE(seqs.Allocate(MakeShape(2, 8, 2, false), io.data()).ok());
  const int32_t tokens[2] = {1, 1};
  seqs.Record(1, &tokens[0], 1, {1, 0, 0, true});
  seqs.Record(0, &tokens[1], 1, {1, 0, 1, true});
  io.assign(4, -1.0f);  // the next step overwrites the io rows; the copies stay
  EXPECT_EQ(std::vector<float>(seqs.logits(1), seqs.logits(1) + 2),
            (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(std::vector<float>(seqs.logits(0), seqs.logits(0) + 2),
            (std::vector<float>{3.0f, 4.0f}));
  EXPECT_FALSE(seqs.at(0).host_stale);  // each copy was fetched before it was taken
}

TEST(EngineSequencesTest, ResetEmptiesTheConversationButKeepsTheGenerator) {
  std::vector<float> io(2, 0.0f);
  Sequences seqs;
  ASSERT_TRUE(seqs.Allocate(MakeShape(1, 8, 2, false), io.data()).ok());
  seqs.at(0).rng.Seed(42);
  Rng expected;
  expected.Seed(42);
  const int32_t token = 1;
  seqs.Record(0, &token, 1, {3, 0, 0, false});
  seqs.Reset(0);
  EXPECT_EQ(seqs.at(0).position, 0);
  EXPECT_FALSE(seqs.at(0).have_logits);
  EXPECT_EQ(seqs.at(0).logits_step, 0u);
  size_t n = 1;
  seqs.History(0, &n);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(seqs.at(0).rng.NextUnit(), expected.NextUnit());
}

TEST(EngineSequencesTest, HostBytesCountsHistoriesLogitsCopiesAndTheInOrderRing) {
  const uint64_t state = sizeof(Sequence);
  EXPECT_EQ(Sequences::HostBytes(MakeShape(1, 16, 100, false)), 16 * 4 + state);
  EXPECT_EQ(Sequences::HostBytes(MakeShape(1, 16, 100, true)), 2 * 16 * 4 + state);
  EXPECT_EQ(Sequences::HostBytes(MakeShape(3, 16, 100, false)),
            3 * 16 * 4 + 3 * 100 * 4 + 3 * state);
}

}  // namespace
}  // namespace staticlm
