// Giving back the resident pages of memory a process no longer reads, at init: the CPU backend
// pages out the model file's copy of each matrix it has repacked into planned memory, so the
// process does not hold the same weights twice (packed_weights.h).
#pragma once

#include <cstddef>

namespace staticlm {

// Init only. Asks the kernel to reclaim the whole pages inside [data, data + bytes) now
// (madvise MADV_PAGEOUT): pages of a file mapping leave the resident set and are read again
// from the file if touched; anonymous pages are swapped out or stay; a page another process
// maps too stays where it is (the kernel does not reclaim shared pages). The contents never change,
// so this is safe on any mapping — it is a hint, and its effect is only on memory and on the
// time of a later first touch. Returns false where the kernel does not take it (before Linux
// 5.4, locked pages, not Linux); nothing else happens then.
bool PageOut(const void* data, size_t bytes);

}  // namespace staticlm
