// What the fuzz targets (tests/fuzz/*_fuzz.cpp) and make_fuzz_seeds share: the tiny model and
// the contexts the session target loads files into, the repair of checksums and fingerprints
// that lets the fuzzer reach past them, and small file helpers. Fuzzing only; allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "staticlm/staticlm.h"

namespace staticlm::fuzz {

// The tiny random-weight Llama (tests/support/tiny_llama.cpp) the session target and the plan
// seeds use: deterministic, so committed session and plan seeds stay valid for it.
void WriteFuzzModel(const std::string& path);

// The limits of the session target's contexts: kind 0 a static f16 cache, kind 1 a window with
// attention sinks and a q8 cache (another header, another payload layout).
constexpr int kSessionContextKinds = 2;
staticlm_limits SessionLimits(int kind);

// FNV-1a, as the plan and session files checksum their bytes.
uint64_t Fnv1a(const uint8_t* data, size_t size);

// Bits of a fuzz input's first byte that ask the plan and session targets to repair the rest
// before loading it, so that mutated files get past the checksums (and the fingerprint) to
// the checks behind them; inputs without them test the checks themselves.
constexpr uint8_t kRepairChecksums = 1;
constexpr uint8_t kRepairFingerprint = 2;

// Plan file (runtime/plan/plan_file.h): sets the header's payload size and checksum.
void RepairPlanFile(std::vector<uint8_t>* file);
// Session file (runtime/session/session_file.h): with kRepairFingerprint writes
// `fingerprint`; with kRepairChecksums sets the payload checksum and the header's own. A header
// that does not decode after its checksum is repaired is left as it is.
void RepairSessionFile(uint8_t repairs, uint64_t fingerprint, std::vector<uint8_t>* file);

std::vector<uint8_t> ReadFileBytes(const std::string& path);
void WriteFileBytes(const std::string& path, const uint8_t* data, size_t size);

// A path for the process's scratch file `name`, in /dev/shm when it exists (the session
// target writes one per input).
std::string ScratchPath(const std::string& name);

// Aborts with `what` (and the context's last error) when `status` is not STATICLM_OK: a
// fuzz target's fixture that cannot be built is a broken harness, not a finding.
void Require(staticlm_status status, const char* what, staticlm_context* context = nullptr);

}  // namespace staticlm::fuzz
