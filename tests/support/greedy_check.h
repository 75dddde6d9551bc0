// The greedy-continuation check shared by the golden tests of every model: each case's prompt is
// prefilled, then tokens are taken by argmax and compared with the reference's. A divergence is
// accepted only where the reference's top-2 gap is below `tolerance` (a near tie that summation
// order may flip); that case's comparison stops there, since the texts legitimately differ
// afterwards. Failures are GoogleTest failures naming the case and step.
#pragma once

#include <vector>

#include "staticlm/staticlm.h"
#include "tests/support/golden_files.h"

namespace staticlm::test {

// Runs every case on `ctx` (reset before each) and prints how many stopped at a near tie.
void CheckGreedyCases(staticlm_context* ctx, const std::vector<GreedyCase>& cases, float tolerance);

}  // namespace staticlm::test
