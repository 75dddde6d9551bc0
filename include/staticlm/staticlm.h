/*
 * staticlm — the C API for embedding a small decoder-only language model with static memory.
 *
 * Two phases. Init (staticlm_plan_memory, staticlm_create) maps the model, builds the plan,
 * sizes and allocates every buffer, and may fail with a message saying what and where. The run
 * phase (every other call on a context) never allocates heap memory, never creates a thread,
 * never performs I/O, and reports errors as a status plus a static message available from
 * staticlm_last_error(). Each declaration below states its phase. The session calls
 * (staticlm_session_save, staticlm_session_load) are the exception to "no I/O": they read or
 * write a file, but they too allocate nothing.
 *
 * NULL arguments: a NULL context, or a NULL pointer the call must read (a path, tokens,
 * messages, a sampler) or write (a count, a token, an info struct), is
 * STATICLM_INVALID_ARGUMENT, with a message naming it in staticlm_last_error (for a NULL
 * context: "context is NULL"), and nothing else happens. A buffer may be NULL only with
 * capacity 0. Calls that return no status then do nothing and return 0, -1 for a position,
 * NULL for data (logits, history) or "" for text (backend name, notes).
 *
 * Threading: a context is used by one thread at a time; distinct contexts are independent.
 * Ownership: the caller owns every buffer it passes; staticlm keeps no pointer to them after
 * the call returns, unless stated.
 */
#ifndef STATICLM_STATICLM_H_
#define STATICLM_STATICLM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum staticlm_status {
  STATICLM_OK = 0,
  STATICLM_INVALID_ARGUMENT = 1, /* bad limit, token id, flag, prompt (e.g. invalid UTF-8) */
  STATICLM_IO_ERROR = 2,         /* a file cannot be opened or mapped */
  STATICLM_FORMAT_ERROR = 3,     /* a malformed model file */
  STATICLM_UNSUPPORTED = 4,      /* a valid model this build cannot run (architecture, type) */
  STATICLM_OUT_OF_MEMORY = 5,    /* init could not allocate the planned memory */
  STATICLM_CONTEXT_FULL = 6,     /* the step would exceed max_context; the cache is unchanged */
  STATICLM_INVALID_STATE = 7,    /* a call out of order (e.g. sampling before any prefill) */
  STATICLM_INTERNAL = 8
} staticlm_status;

/* Element type of the KV cache. Q8: int8 with a scale per token and head. Q4: 4-bit in the
 * manner of KIVI (keys per channel, values per token), the most recent tokens in full precision. */
#define STATICLM_WINDOW_FROM_MODEL (-1)

typedef enum staticlm_kv_type {
  STATICLM_KV_F16 = 0,
  STATICLM_KV_F32 = 1,
  STATICLM_KV_Q8 = 2,
  STATICLM_KV_Q4 = 3
} staticlm_kv_type;

/* The limits a context is built for: the only source of sizes. */
typedef struct staticlm_limits {
  int32_t max_context;      /* cache positions (prompt + generated tokens); ≤ model's context */
  int32_t max_batch;        /* sequences held and decoded together, 1 … 64 (see "Batched
                               sequences" below); each has its own KV cache part */
  int32_t prefill_chunk;    /* most tokens per forward step; longer prompts are chunked */
  int32_t max_prompt_bytes; /* longest text staticlm_tokenize / staticlm_format_chat accept */
  staticlm_kv_type kv_type; /* element type of the KV cache */
  int32_t threads;          /* worker threads, created at init (1 = the calling thread only) */
  /* How the CPU backend runs (the results are identical whatever these say): */
  int32_t reference_kernels; /* nonzero: the plain reference kernels (the oracle), not SIMD */
  int32_t busy_wait;         /* nonzero: workers spin between ops instead of sleeping */
  int32_t pin_threads;       /* nonzero: pin worker i to core i */
  /* nonzero: pre-fault and mlock weights, cache, arena and io at init, so no page fault or
   * paging disturbs the run; where the system refuses, staticlm_init_notes says why. */
  int32_t lock_memory;
  /* A plan file (made by staticlm_save_plan) to load instead of building plans; NULL: build.
   * Its context, batch, chunk and KV type replace the fields above. Borrowed for the call. */
  const char* plan_path;
  /* Fusion passes not to apply when building plans (all are applied by default): a mask of
   * staticlm_fusion_pass() values. Fused and unfused plans give the same logits. */
  uint32_t disabled_fusions;
  /* The backend: "cpu", "vulkan", "cuda" or "auto" (CUDA when a device works, else Vulkan, else
   * the CPU, saying which and why in staticlm_init_notes); NULL means "cpu". Borrowed for the
   * call. */
  const char* backend;
  int32_t device; /* Vulkan, CUDA: the device index (staticlm_list_devices); 0 = the first */
  /* Cache policy. window > 0: a sliding window of that many positions (a ring buffer), so
   * generation goes on past max_context with constant memory. sinks > 0 (needs window): keep
   * the first `sinks` positions as attention sinks (StreamingLLM). 0, 0: the static cache.
   * window = STATICLM_WINDOW_FROM_MODEL: the window and layer pattern the model's metadata
   * gives (GGUF <arch>.attention.sliding_window, .sliding_window_pattern); an error if none.
   * A family whose layers slide by design (gemma3) always uses the model's window and pattern
   * (the hybrid cache: rings on the sliding layers, the whole context on the global ones);
   * any other positive window is then an error — except with sinks > 0, which bound the
   * global layers too: they keep the sinks and the last window − sinks positions, window at
   * least the model's (its sliding layers keep the model's window, without sinks), so
   * generation goes on past max_context in constant memory. A model whose every layer slides
   * refuses sinks. */
  int32_t window;
  int32_t sinks;
  /* Per-layer policy, with a window: layer i keeps a static (global) cache when
   * (i + 1) % global_every == 0, the others the window; 0 or 1: every layer windowed. */
  int32_t global_every;
  /* Snapshot slots for staticlm_snapshot_save / staticlm_snapshot_restore (prefix reuse),
   * allocated at init, each the size of the KV cache plus the token history and one row of
   * logits (see staticlm_memory.snapshot_bytes). Default 0: none, so a context that never
   * snapshots pays nothing. At most 64. */
  int32_t max_snapshots;
  /* Vulkan: a pipeline cache file, loaded at init when this driver and device made it (a stale
   * or corrupt file is ignored) and written after the pipelines are made, so a second start
   * skips shader compilation; staticlm_init_notes says what happened. NULL: "<plan_path>.vkcache"
   * when plan_path is set, else no cache; "": no cache. Borrowed for the call. */
  const char* pipeline_cache_path;
  /* CPU: products with Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q4_K weights (and Q5_K, Q6_K at 8 bits) quantize
   * their activations per block of 32 to this many bits and use integer dot products (AVX-512
   * VNNI or AVX2; 8 bits also arm64 NEON with the dot-product instructions). 0 (default): f32
   * activations. 16: within the golden tolerance of transformers (largest logit difference
   * 0.006 with an f32 cache) and faster. 8: faster still, but moves SmolLM2's logits by about
   * 1 (outside the tolerance); with AVX2, AVX-512 VNNI or NEON dot products it also copies
   * the Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K and Q5_K matrices into a packed layout at init
   * (staticlm_memory.packed_weights_bytes). Other values are STATICLM_INVALID_ARGUMENT; CPUs
   * without the instructions keep f32 activations (staticlm_backend_description says which). */
  int32_t activation_bits;
  /* A Hugging Face folder (model_path a directory): quantize its weight matrices at init into
   * the weight buffer, "q8_0", "q4_0" or "q4_k" (q4_k: rows that are not whole 256-value blocks
   * as q4_0; matrices whose rows are not whole blocks keep their type); NULL or "": use the
   * stored F32/F16/BF16 tensors in place. An error for a GGUF file. Borrowed for the call. */
  const char* quantize;
  /* CPU: the instruction set the kernels use, chosen at init: "auto" (or NULL) for the best
   * this CPU has (AVX-512, else AVX2, else NEON, else scalar), or "avx512", "avx2", "neon",
   * "scalar" (the plain reference kernels). One the CPU lacks makes init fail with
   * STATICLM_UNSUPPORTED naming what it has; any other name is STATICLM_INVALID_ARGUMENT.
   * Overrides a plan file's kernel choice; reference_kernels overrides it.
   * staticlm_backend_description names the ISA chosen. Borrowed for the call. */
  const char* isa;
  /* Nonzero times every op of every step, summed by op kind and weight type for
   * staticlm_op_profile: the CPU backend with two clock reads per op, the Vulkan backend with a
   * device timestamp after each dispatch (its init fails, STATICLM_UNSUPPORTED, on a device
   * whose queue writes none), the CUDA backend with an event after each op in its graphs
   * (which then run without programmatic launch, so its steps are slower than untimed ones);
   * none allocates. 0 (default): no timing. */
  int32_t profile_ops;
  /* Nonzero (the default): the KV cache, arena, io buffer and the CPU backend's packed weights
   * are allocated on transparent huge pages where the system allows (Linux with
   * /sys/kernel/mm/transparent_hugepage/enabled "always" or "madvise"), which makes decode
   * faster by saving a TLB miss per 4 KiB streamed; each such buffer is then rounded up to whole
   * huge pages (2 MiB on x86-64). 0: normal pages. The results are the same either way. */
  int32_t huge_pages;
} staticlm_limits;

/* Any phase. The mask bit of the fusion pass called `name`: "norm" (RMSNorm folded into the
 * next matmul), "qkv" (Q, K, V projections as one op), "gate_up" (gate and up projections with
 * SiLU-multiply as one op), "residual" (residual add folded into the matmul before it), or
 * "all". 0 for an unknown name. */
uint32_t staticlm_fusion_pass(const char* name);

/* Fills `limits` with the defaults: context 2048, batch 1, chunk 64, 16 KiB prompts, f16 KV,
 * 1 thread, fastest kernels, sleeping unpinned workers. Any phase; never fails. */
void staticlm_limits_default(staticlm_limits* limits);

/* Bytes a context will hold, split as the memory map of DESIGN.md. */
typedef struct staticlm_memory {
  uint64_t weights_bytes;           /* model tensor data, mapped from the file (not copied) */
  uint64_t kv_cache_bytes;          /* keys and values of every layer */
  uint64_t arena_bytes;             /* activations and scratch, shared by liveness */
  uint64_t io_bytes;                /* step inputs and logits */
  uint64_t host_bytes;              /* tokenizer, sampler and text scratch sized by the limits */
  uint64_t total_bytes;             /* the sum of the above */
  uint64_t arena_lower_bound_bytes; /* most bytes live at one op: the best any arena can do */
  uint64_t arena_naive_bytes;       /* the arena with no sharing */
  /* Snapshot slots (max_snapshots of them) and the buffer session files stream through;
   * included in total_bytes. */
  uint64_t snapshot_bytes;
  /* kv_cache_bytes by layer kind: the layers whose cache is a ring (sliding window or sinks)
   * and those that keep the whole context (global). */
  uint64_t kv_ring_bytes;
  uint64_t kv_global_bytes;
  /* What the KV cache would take with every layer global at the same context (transformers'
   * StaticCache), for comparison with a hybrid or windowed cache. */
  uint64_t kv_all_global_bytes;
  /* Weights copied at init into the backend's own layout, beside the mapped file: the CPU's
   * packed Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q6_K, Q4_K and Q5_K matrices when int8 activations run on
   * AVX2 or AVX-512 VNNI; included in total_bytes. The file's pages of a packed matrix nothing else
   * reads (all but a tied embedding) are paged out at init, so they are not resident twice. */
  uint64_t packed_weights_bytes;
} staticlm_memory;

/* Init phase. Builds the plan for `model_path` under `limits` and reports its memory without
 * allocating the buffers. On failure writes a one-line message into `error` (may be NULL). */
staticlm_status staticlm_plan_memory(const char* model_path, const staticlm_limits* limits,
                                     staticlm_memory* memory, char* error, size_t error_capacity);

/* Init phase. The CPU instruction set a context with `limits` would run and those this CPU
 * offers, e.g. "isa avx2 (cpu has avx512 avx2 scalar)", into `out` (NUL-terminated, truncated
 * to `capacity`). STATICLM_UNSUPPORTED (message in `error`) when limits->isa names one this
 * CPU lacks, as staticlm_create would fail. Ignores a plan file's kernel choice. */
staticlm_status staticlm_cpu_isa(const staticlm_limits* limits, char* out, size_t capacity,
                                 char* error, size_t error_capacity);

/* Init phase. Writes a human-readable description of the model file into `out` (NUL-terminated,
 * truncated to `capacity`): architecture and hyperparameters, scalar metadata, and the tensor
 * types with their counts and bytes. Validates the file as staticlm_create does. */
staticlm_status staticlm_describe_model(const char* model_path, char* out, size_t capacity,
                                        char* error, size_t error_capacity);

/* Init phase. Writes one line per Vulkan device into `out` (NUL-terminated, truncated to
 * `capacity`), e.g. "0: llvmpipe (LLVM 15.0.6, 256 bits) [cpu, Vulkan 1.3]"; the number before
 * the colon is staticlm_limits.device. `*n_devices` gets the count (may be NULL).
 * STATICLM_UNSUPPORTED, with the reason in `error`, when this build has no Vulkan backend or
 * the machine has no driver or device. */
staticlm_status staticlm_list_devices(char* out, size_t capacity, int* n_devices, char* error,
                                      size_t error_capacity);

/* Init phase. As staticlm_list_devices, for the CUDA devices: one line each, e.g.
 * "0: NVIDIA H100 80GB HBM3 [compute 9.0, 79.2 GiB]" (compute capability, total memory); the
 * number before the colon is staticlm_limits.device for the CUDA backend. STATICLM_UNSUPPORTED,
 * with the reason in one line in `error`, when this build has no CUDA backend or the machine
 * has no CUDA driver or device. */
staticlm_status staticlm_list_cuda_devices(char* out, size_t capacity, int* n_devices, char* error,
                                           size_t error_capacity);

/* Init phase. Builds the plans for `model_path` under `limits` and writes them to `plan_path`
 * (atomically: a temporary file renamed into place): a versioned, checksummed file bound to
 * this model's bytes, recording the limits and the backend's kernel choice. */
staticlm_status staticlm_save_plan(const char* model_path, const staticlm_limits* limits,
                                   const char* plan_path, char* error, size_t error_capacity);

/* Init phase. Writes a report of the plans for `model_path` under `limits` (built, or loaded
 * when limits->plan_path is set) into `out`, NUL-terminated: with `json` == 0 the op table
 * (kernel, tensors, regions, bytes read and written, FLOPs, totals per step), otherwise one JSON
 * object with "decode" and "prefill" summaries (arena_bytes, lower_bound_bytes, naive_bytes,
 * bytes_read_per_step, ops, ...). `*needed` receives the bytes the whole report needs; a
 * smaller `capacity` truncates it. */
staticlm_status staticlm_plan_report(const char* model_path, const staticlm_limits* limits,
                                     int json, char* out, size_t capacity, size_t* needed,
                                     char* error, size_t error_capacity);

typedef struct staticlm_context staticlm_context;

/* Init phase. Maps the model, builds the plan, allocates every buffer once, prepares the
 * backend and warms up. On success `*context` is owned by the caller (staticlm_destroy). On
 * failure `*context` is NULL and a one-line message is written into `error` (may be NULL). */
staticlm_status staticlm_create(const char* model_path, const staticlm_limits* limits,
                                staticlm_context** context, char* error, size_t error_capacity);

/* Frees everything the context holds. Accepts NULL. */
void staticlm_destroy(staticlm_context* context);

/* Run phase. The message of the last call that failed on this context ("ok" if none). The
 * pointer stays valid until the next call on the context. */
const char* staticlm_last_error(const staticlm_context* context);

/* Run phase. The memory the context holds (as staticlm_plan_memory reported). */
void staticlm_get_memory(const staticlm_context* context, staticlm_memory* memory);

typedef struct staticlm_model_info {
  int32_t n_layers, width, n_heads, n_kv_heads, head_dim, ffn_width, vocab_size, context_length;
  float rope_base, rms_eps;
  int32_t add_bos; /* whether tokenization prepends BOS (the file's flag) */
} staticlm_model_info;

/* Run phase. */
void staticlm_get_model_info(const staticlm_context* context, staticlm_model_info* info);

/* Run phase. Tokenizes `text` (`text_bytes` bytes of UTF-8; invalid UTF-8 or more than
 * max_prompt_bytes is STATICLM_INVALID_ARGUMENT). With `parse_special` != 0, special tokens
 * written in the text (such as "<|im_start|>") become single tokens. Writes at most `capacity`
 * ids; too few is STATICLM_INVALID_ARGUMENT. */
staticlm_status staticlm_tokenize(staticlm_context* context, const char* text, size_t text_bytes,
                                  int parse_special, int32_t* tokens, size_t capacity,
                                  size_t* n_tokens);

/* Run phase; no allocation. Writes the vocabulary's spelling of `token` (what transformers'
 * convert_ids_to_tokens gives: "\xC4\xA0the" ("Ġthe") for byte-level BPE, "\xE2\x96\x81the"
 * ("▁the") or "<0x0A>" for SentencePiece; a special token's text), not NUL-terminated.
 * STATICLM_INVALID_ARGUMENT for an id out of range or too small a buffer. */
staticlm_status staticlm_token_piece(staticlm_context* context, int32_t token, char* out,
                                     size_t capacity, size_t* n_bytes);

typedef struct staticlm_chat_message {
  const char* role;    /* "system", "user" or "assistant" */
  const char* content; /* NUL-terminated UTF-8 */
} staticlm_chat_message;

/* Run phase; no allocation. Renders messages with the context's chat format (see
 * staticlm_set_chat_format): the one recognised in the model's template (ChatML for SmolLM2,
 * with its default system message when the first message is not a system message; Gemma's
 * <start_of_turn> turns, a leading system message's text opening the first user turn),
 * followed by the assistant generation prompt when `add_generation_prompt` != 0. The text is
 * the template's rendering, except that a {{ bos_token }} it starts with is left out when
 * tokenization prepends BOS itself (staticlm_model_info.add_bos), so BOS is never doubled
 * (written as the BOS token's text otherwise).
 * With `continuation` != 0 no default system message is inserted and a system message does not
 * join the first turn: use it to render the next turn of a conversation whose earlier turns
 * are in the cache up to the end-of-turn token (staticlm_chat_format_info.end_of_turn); the
 * text starts with what the template puts after that token. The output is not NUL-terminated.
 * STATICLM_INVALID_STATE when the context has no chat format (the model has no template, or
 * one staticlm does not recognise): the message says so in one line and names the format to
 * force; STATICLM_INVALID_ARGUMENT for a null role or content, roles that do not alternate
 * user/assistant where the template requires it (Gemma), or an `out` too small. */
staticlm_status staticlm_format_chat(staticlm_context* context,
                                     const staticlm_chat_message* messages, size_t n_messages,
                                     int add_generation_prompt, int continuation, char* out,
                                     size_t capacity, size_t* n_bytes);

/* Init phase: call after staticlm_create, before the run phase (it may allocate). Chooses the
 * chat format of staticlm_format_chat: "chatml", "gemma", "llama3", "phi3", "mistral" or
 * "mistral-nemo" forces that family's reference format (ChatML without a default system message)
 * whatever the model's file says, for a model without a chat template (Gemma 3 270M base) or with
 * one staticlm does not recognise; NULL or "" goes back to the file's template. `name` is borrowed
 * for the call. An unknown name is STATICLM_INVALID_ARGUMENT (the message lists the known ones)
 * and changes nothing. */
staticlm_status staticlm_set_chat_format(staticlm_context* context, const char* name);

typedef struct staticlm_chat_format_info {
  const char* name; /* "chatml", "gemma", "llama3", "phi3", "mistral" or "mistral-nemo" */
  /* The text of the token that ends a turn ("<|im_end|>", "<end_of_turn>", "<|eot_id|>",
   * "<|end|>", "</s>"); generation stops
   * at it (staticlm_is_end_of_generation). A reply sampled up to it but not decoded is closed
   * by starting the next turn's text with it, before a continuation. */
  const char* end_of_turn;
  /* Nonzero: a system message is a turn of its own, which can be rendered and prefilled
   * alone. 0: it has no role of its own and joins the first user turn (Gemma), so it must be
   * rendered together with that turn, or the template has none (Mistral [INST]), or it joins
   * the last user message (Mistral NeMo; a continuation does not repeat it). */
  int32_t system_turn;
} staticlm_chat_format_info;

/* Run phase; no allocation. Describes the context's chat format into `info`; its strings are
 * static (they outlive the context). STATICLM_INVALID_STATE, with staticlm_format_chat's
 * message, when the context has none. */
staticlm_status staticlm_chat_format(staticlm_context* context, staticlm_chat_format_info* info);

/* Run phase. Appends `n_tokens` tokens at the next cache positions (prefilled in chunks of
 * prefill_chunk) and computes the logits of the last one. Token ids outside the vocabulary are
 * STATICLM_INVALID_ARGUMENT; exceeding max_context is STATICLM_CONTEXT_FULL. Either error
 * leaves the cache and position as they were. */
staticlm_status staticlm_prefill(staticlm_context* context, const int32_t* tokens, size_t n_tokens);

/* Run phase. staticlm_prefill of one token. */
staticlm_status staticlm_decode(staticlm_context* context, int32_t token);

/* Run phase. The logits (vocab_size floats) of the last token processed, or NULL before any.
 * Valid until the next prefill, decode or reset. */
const float* staticlm_logits(const staticlm_context* context);

/* Sampling settings; temperature 0 is greedy (ties go to the lowest id). */
typedef struct staticlm_sampler {
  float temperature;
  int32_t top_k;             /* 0 = off */
  float top_p;               /* 1 = off */
  float min_p;               /* 0 = off */
  float repetition_penalty;  /* 1 = off; divides positive logits, multiplies negative ones */
  int32_t repetition_window; /* recent tokens the penalty looks at; 0 = the whole history */
} staticlm_sampler;

/* Fills `sampler` with the defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no
 * repetition penalty). Any phase. */
void staticlm_sampler_default(staticlm_sampler* sampler);

/* Run phase. Seeds the context's random generator (every sequence's, each with this seed). The
 * same seed, limits, prompt and settings give the same tokens, bit for bit. A new context is
 * seeded with 0. */
void staticlm_seed(staticlm_context* context, uint64_t seed);

/* Run phase. Samples the next token from the current logits. The penalty uses the context's
 * token history (every token prefilled or decoded since the last reset). */
staticlm_status staticlm_sample(staticlm_context* context, const staticlm_sampler* sampler,
                                int32_t* token);

/* Run phase. Nonzero for tokens that end a generation (end of text, end of turn). */
int staticlm_is_end_of_generation(const staticlm_context* context, int32_t token);

/* Run phase. Streaming detokenization: appends the text of `token` to what the context holds
 * back and writes every complete UTF-8 character into `out`, keeping an incomplete trailing
 * sequence until the next call. So `out` never ends inside a character. `capacity` ≥ 64 always
 * suffices for one token of SmolLM2. */
staticlm_status staticlm_token_to_text(staticlm_context* context, int32_t token, char* out,
                                       size_t capacity, size_t* n_bytes);

/* Run phase. Writes out what staticlm_token_to_text holds back (an incomplete character is
 * written as U+FFFD) and returns the byte count. */
size_t staticlm_flush_text(staticlm_context* context, char* out, size_t capacity);

/* Run phase. Forgets the conversation: position 0, empty history, empty text stream. With
 * several sequences, forgets every one (staticlm_seq_reset forgets one). */
void staticlm_reset(staticlm_context* context);

/* Run phase. The next cache position (tokens in the cache). */
int32_t staticlm_position(const staticlm_context* context);

/* Run phase. The token history since the last reset (prompt and generated tokens), oldest
 * first; under a window (positions past max_context) the last max_context of them. The pointer
 * stays valid until the next prefill, decode, reset or history call. */
const int32_t* staticlm_history(const staticlm_context* context, size_t* n_tokens);

/* Run phase: no allocation, no I/O. Copies the conversation into snapshot slot `slot`
 * (0 ≤ slot < limits.max_snapshots), replacing what the slot held: the cache entries in use,
 * the position, the token history, the last logits and the text staticlm_token_to_text holds
 * back. Under the static cache only the first `position` entries of each head are copied;
 * under other cache policies the whole cache. The random generator is not part of a snapshot
 * (seed each conversation as you like). STATICLM_INVALID_ARGUMENT for a slot out of range.
 * The conversation itself is never changed. */
staticlm_status staticlm_snapshot_save(staticlm_context* context, int32_t slot);

/* Run phase: no allocation, no I/O. Makes the conversation the one saved in `slot`, without
 * prefilling anything: the next prefill continues after it, and staticlm_logits returns the
 * logits it had. Prefix reuse: prefill a shared prefix (a system prompt) once, save it, and
 * restore it at the start of every new conversation; a slot can be restored any number of
 * times. The result is bit for bit what prefilling the prefix again would give.
 * STATICLM_INVALID_ARGUMENT (slot out of range) or STATICLM_INVALID_STATE (nothing saved in the
 * slot) leave the conversation unchanged. */
staticlm_status staticlm_snapshot_restore(staticlm_context* context, int32_t slot);

/* File I/O, no allocation. Saves the conversation to `path` (borrowed for the call): the cache
 * entries in use, the position, the token history, the last logits, the text held back and the
 * random generator's state, behind a header naming the format version, the model's
 * fingerprint, a hash of the plan and the cache policy (README: "Session files"). Writing is
 * atomic: the bytes go to a temporary file beside `path`, are synced, and the temporary is
 * renamed over `path`, so `path` holds its old contents or the whole new session, never a part.
 * STATICLM_IO_ERROR when the file cannot be written (the temporary is removed). The
 * conversation is unchanged either way. */
staticlm_status staticlm_session_save(staticlm_context* context, const char* path);

/* File I/O, no allocation. Replaces the conversation with the one saved in `path`, so that
 * generation continues exactly as the uninterrupted run would have (same logits, same random
 * state: the same tokens). The context must come from the same model file and the same plan
 * (context, prefill chunk, KV type, cache policy, fusions); threads, kernels and
 * max_snapshots may differ. Everything is checked before the conversation is touched: header,
 * sizes, and a checksum over every byte (the file is read twice: verify, then apply). Errors,
 * each with a message naming the file, leave the context exactly as it was:
 * STATICLM_IO_ERROR (cannot be read), STATICLM_UNSUPPORTED (another format version),
 * STATICLM_INVALID_ARGUMENT (another model, plan or cache policy), STATICLM_FORMAT_ERROR (not a
 * session file, truncated or corrupted). Only a file modified in place between the two reads
 * can fail after that; then the conversation is reset and STATICLM_IO_ERROR returned. */
staticlm_status staticlm_session_load(staticlm_context* context, const char* path);

/* ---- Batched sequences ----------------------------------------------------------------------
 * A context made with limits.max_batch = B > 1 holds B independent sequences, ids 0 … B − 1,
 * each with its own part of the KV cache (sized at init: kv_cache_bytes is B times one
 * sequence's), position, token history, logits, text stream and random generator.
 * staticlm_decode_batch computes the next token of several sequences in one step, reading the
 * weights once for all of them. A sequence's logits are bit for bit those it would get alone (in
 * a context with max_batch 1 and otherwise the same limits, kernels and threads), whichever
 * other sequences share its steps. A finished sequence's slot is reused by staticlm_seq_reset
 * (or by restoring a snapshot into it), which touches no other sequence. The calls without a
 * sequence argument act on sequence 0, except staticlm_reset and staticlm_seed (every
 * sequence). All run phase: no allocation (the session calls do file I/O). An id outside
 * 0 … max_batch − 1 is STATICLM_INVALID_ARGUMENT. */

/* staticlm_prefill for sequence `sequence`. */
staticlm_status staticlm_seq_prefill(staticlm_context* context, int32_t sequence,
                                     const int32_t* tokens, size_t n_tokens);

/* One step: appends tokens[i] to sequence sequences[i] for i < n (1 ≤ n ≤ max_batch, the
 * sequences distinct) and computes each one's logits. An invalid token or sequence id is
 * STATICLM_INVALID_ARGUMENT and a sequence at the end of its context STATICLM_CONTEXT_FULL;
 * both are found before anything changes. */
staticlm_status staticlm_decode_batch(staticlm_context* context, const int32_t* sequences,
                                      const int32_t* tokens, size_t n);

/* staticlm_logits of a sequence (NULL before its first step or for an invalid id). */
const float* staticlm_seq_logits(const staticlm_context* context, int32_t sequence);

/* staticlm_sample from a sequence's logits, history and random generator. */
staticlm_status staticlm_seq_sample(staticlm_context* context, int32_t sequence,
                                    const staticlm_sampler* sampler, int32_t* token);

/* Seeds one sequence's random generator. */
staticlm_status staticlm_seq_seed(staticlm_context* context, int32_t sequence, uint64_t seed);

/* Forgets one sequence's conversation (position 0, empty history and text stream), freeing its
 * slot for a new one; the other sequences are untouched. */
staticlm_status staticlm_seq_reset(staticlm_context* context, int32_t sequence);

/* A sequence's next cache position, or −1 for an invalid id. */
int32_t staticlm_seq_position(const staticlm_context* context, int32_t sequence);

/* staticlm_history of a sequence (NULL and *n_tokens = 0 for an invalid id). */
const int32_t* staticlm_seq_history(const staticlm_context* context, int32_t sequence,
                                    size_t* n_tokens);

/* staticlm_token_to_text and staticlm_flush_text on a sequence's own text stream. */
staticlm_status staticlm_seq_token_to_text(staticlm_context* context, int32_t sequence,
                                           int32_t token, char* out, size_t capacity,
                                           size_t* n_bytes);
size_t staticlm_seq_flush_text(staticlm_context* context, int32_t sequence, char* out,
                               size_t capacity);

/* staticlm_snapshot_save of a sequence, and staticlm_snapshot_restore into a sequence: a slot
 * saved from one sequence may be restored into any (prefix reuse across sequences; a slot holds
 * one sequence's cache part). */
staticlm_status staticlm_seq_snapshot_save(staticlm_context* context, int32_t sequence,
                                           int32_t slot);
staticlm_status staticlm_seq_snapshot_restore(staticlm_context* context, int32_t slot,
                                              int32_t sequence);

/* staticlm_session_save of a sequence, and staticlm_session_load into a sequence. A session
 * file records the plan, so it loads only into a context with the same max_batch (and other
 * limits); any sequence of it. */
staticlm_status staticlm_seq_session_save(staticlm_context* context, int32_t sequence,
                                          const char* path);
staticlm_status staticlm_seq_session_load(staticlm_context* context, int32_t sequence,
                                          const char* path);

/* What one step reads and computes, derived from the plan. */
typedef struct staticlm_step_cost {
  uint64_t weight_bytes;     /* weights read (every matrix once per step) */
  uint64_t kv_cache_bytes;   /* KV cache read and written */
  uint64_t activation_bytes; /* activations read and written */
  uint64_t bytes_read;       /* everything read: what bounds a step by memory bandwidth */
  uint64_t bytes_written;
  uint64_t total_bytes; /* read + written */
  uint64_t flops;
} staticlm_step_cost;

/* Run phase. The cost of a step of `n_tokens` tokens starting at cache position `position`
 * (a decode step at depth d: n_tokens 1, position d). */
void staticlm_step_cost_get(const staticlm_context* context, int32_t n_tokens, int32_t position,
                            staticlm_step_cost* cost);

/* Run phase. A one-line description of the backend's choices (kernels, threads). */
const char* staticlm_backend_description(const staticlm_context* context);

/* Run phase. The backend that runs this context ("cpu", "vulkan" or "cuda"). */
const char* staticlm_backend_name(const staticlm_context* context);

/* Run phase. What init wants the user to know, "; "-separated, or "" when nothing: with
 * backend "auto", the one chosen and why those tried before it were not used ("backend: cpu
 * (cuda: no CUDA device found; vulkan: ...)"); with
 * lock_memory, why the memory could not be locked. */
const char* staticlm_init_notes(const staticlm_context* context);

/* Run phase. Seconds the calling thread has spent waiting for worker threads (the
 * synchronisation cost) since the context was created or the counter was reset. */
double staticlm_sync_seconds(const staticlm_context* context);
void staticlm_reset_sync_seconds(staticlm_context* context);

/* One row of an op profile: the ops of one kind (and, for products and embeddings, one weight
 * type) that the context's steps ran since init or staticlm_reset_op_profile. */
typedef struct staticlm_op_time {
  const char* op;      /* "matmul", "attention", "rms_norm", ... (static storage) */
  const char* weight;  /* matmul: the (first) weight's type, "Q4_K", "Q6_K", ...; embed: the
                          table's; other ops: "" (static storage) */
  int64_t calls;       /* ops run */
  double seconds;      /* CPU: their wall time on the calling thread, start to end of each
                          op; Vulkan and CUDA: device time (staticlm_op_profile) */
  double weight_bytes; /* bytes of weight matrices the products read; 0 for other ops */
} staticlm_op_time;

/* Run phase; never allocates. The op profile of a context created with limits.profile_ops:
 * copies up to `capacity` rows into `rows` and sets *n_rows to the number of rows there are
 * (call with capacity 0 to size the array; 32 is enough for every model so far).
 * STATICLM_UNSUPPORTED when the backend keeps no profile (CUDA) or profile_ops was 0. On the
 * Vulkan backend `seconds` is device time: from the end of the previous dispatch to the end of
 * the op's last one (sampling on the device is not timed). */
staticlm_status staticlm_op_profile(const staticlm_context* context, staticlm_op_time* rows,
                                    size_t capacity, size_t* n_rows);
/* Run phase. Empties the op profile (for example before the steps to be measured). */
void staticlm_reset_op_profile(staticlm_context* context);

const char* staticlm_version(void);

#ifdef __cplusplus
}
#endif

#endif /* STATICLM_STATICLM_H_ */
