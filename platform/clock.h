// A monotonic clock for measuring steps. Never allocates.
#pragma once

#include <time.h>

namespace staticlm {

inline double NowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace staticlm
