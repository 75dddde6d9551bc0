// The greedy-continuation check shared by the golden tests of every model: each case's prompt is
// prefilled, then tokens are taken by argmax and compared with the reference's. A divergence is
// accepted only where the reference's top-2 gap is below `tolerance` (a near tie that summation
// order may flip); that case's comparison stops there, since the texts legitimately differ
// afterwards. Where the golden file records the reference's own deviation at a step (llama.cpp,
// whose quantized activations move its logits), a gap below tolerance + 2 × deviation is a near
// tie too: each of the two candidates may have moved by the deviation, in opposite directions.
// Failures are GoogleTest failures naming the case and step.
#pragma once

#include <vector>

#include "staticlm/staticlm.h"
#include "tests/support/golden_files.h"

namespace staticlm::test {

// Runs every case on `ctx` (reset before each) and prints how many stopped at a near tie.
void CheckGreedyCases(staticlm_context* ctx, const std::vector<GreedyCase>& cases, float tolerance);

// Decodes each case's reference ids (so both sides see the same history) and compares the
// largest logit at every step with the reference's top1 within `tolerance`: where a small
// model's ids do not move, a wrong scale or rotation still moves its logits.
void CheckTopLogits(staticlm_context* ctx, const std::vector<GreedyCase>& cases, float tolerance);

}  // namespace staticlm::test
