// What the sanitizer build runs of a test's sweep (issue 19: the test command's time on a fresh
// machine). That build (AddressSanitizer and UndefinedBehaviorSanitizer; STATICLM_SANITIZE) is
// there for memory errors, undefined behaviour and leaks in staticlm's own code. A sweep over
// shader variants on lavapipe spends its time in the driver's compiled shaders, which the
// sanitizers do not see, while staticlm's host code (translation, bindings, recording) takes the
// same path for every variant of a mode. So there the sweep runs one combination per mode,
// rotating through the combinations: every mode, and every combination, still runs at least
// once; the Release build runs them all.
#pragma once

#include <cstddef>

namespace staticlm::test {

#if defined(STATICLM_SANITIZE)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

// Whether combination `combination` (of `combinations`, e.g. style × head size) of the sweep's
// mode number `mode` runs in this build: every one in Release builds; in the sanitizer build
// the one with number mode % combinations (each combination runs when the sweep has at least
// as many modes as combinations).
inline bool SweepRuns(size_t mode, size_t combination, size_t combinations) {
  return !kSanitizerBuild || combination == mode % combinations;
}

// How many cases a sweep of `modes` × `combinations` runs in this build: what a sweep checks it
// ran, so that a subset that shrank to nothing fails instead of passing.
inline size_t SweepCases(size_t modes, size_t combinations) {
  return kSanitizerBuild ? modes : modes * combinations;
}

}  // namespace staticlm::test
