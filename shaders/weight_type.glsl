// For WTYPE (a contract/dtype.h DType value): QK (elements per block), BLOCK_BYTES, and CHUNK,
// the elements one dequantization call produces (shaders/dequant.glsl): a whole block for the
// plain and 32-element types, a 32-element sub-block of the K-quants' 256-element super-blocks,
// so that the shaders' per-call arrays stay 32 values whatever the block size.
#if WTYPE == 0
#define QK 1
#define BLOCK_BYTES 4u
#elif WTYPE == 1 || WTYPE == 30
#define QK 1
#define BLOCK_BYTES 2u
#elif WTYPE == 2
#define QK 32
#define BLOCK_BYTES 18u
#elif WTYPE == 3
#define QK 32
#define BLOCK_BYTES 20u
#elif WTYPE == 6
#define QK 32
#define BLOCK_BYTES 22u
#elif WTYPE == 7
#define QK 32
#define BLOCK_BYTES 24u
#elif WTYPE == 8
#define QK 32
#define BLOCK_BYTES 34u
#elif WTYPE == 12
#define QK 256
#define BLOCK_BYTES 144u
#elif WTYPE == 13
#define QK 256
#define BLOCK_BYTES 176u
#elif WTYPE == 14
#define QK 256
#define BLOCK_BYTES 210u
#endif
#if QK == 256
#define CHUNK 32
#else
#define CHUNK QK
#endif
#define CHUNKS_PER_BLOCK uint(QK / CHUNK)
