// STATICLM_HD marks a small inline function as callable from both host code and CUDA device
// code, so that the CPU reference, the host tests and the CUDA kernels share one definition of
// a piece of arithmetic (cache-slot maths, half-float decoding). Empty for the host compilers.
#pragma once

#ifdef __CUDACC__
#define STATICLM_HD __host__ __device__
#else
#define STATICLM_HD
#endif
