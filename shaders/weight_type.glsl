// QK (elements per block) and BLOCK_BYTES for WTYPE (a contract/dtype.h DType value).
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
#elif WTYPE == 8
#define QK 32
#define BLOCK_BYTES 34u
#endif
