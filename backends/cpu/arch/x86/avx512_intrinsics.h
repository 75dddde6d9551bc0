// <immintrin.h> for the files that use AVX-512 intrinsics (x86-64 only), with GCC 12's false
// warnings silenced: its AVX-512 intrinsics start from self-initialised "undefined" vectors
// that its own -Wuninitialized flags once inlined (GCC bug 105593, fixed in GCC 13). The
// pragmas hold for the rest of the including file, as they must for the inlined intrinsics.
// With STATICLM_AVX512_EMULATED (the kernel tests of scripts/test-avx512-emulated) the
// intrinsics come from SIMDe instead (avx512_emulated.h), and the target macros are empty.
#pragma once

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#if defined(STATICLM_AVX512_EMULATED)
#include "backends/cpu/arch/x86/avx512_emulated.h"
#else
#include <immintrin.h>

// The target of the AVX-512 attention kernels (the matmuls add avx512bw: matmul_avx512.cpp).
#define STATICLM_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx2,fma,f16c")))
#define STATICLM_TARGET_AVX512_INLINE \
  __attribute__((target("avx512f,avx512vl,avx2,fma,f16c"), always_inline)) inline
// The target of the integer-activation kernels (AVX-512 VNNI: matmul_int8_avx512vnni.cpp,
// matmul_packed_avx512vnni.cpp).
#define STATICLM_VNNI                                                          \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c"), \
                 always_inline)) inline
#define STATICLM_VNNI_KERNEL \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
// The matrix products of f32 activations (matmul_avx512.cpp).
#define STATICLM_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"), always_inline)) inline
#define STATICLM_AVX512_KERNEL __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#endif  // STATICLM_AVX512_EMULATED
#endif
