// The cache policies of contract/kv_policy.h, line for line, for kv_store.comp,
// attention_split.comp and kv_quantize_q4.comp: which slot holds a position, and which
// positions a query attends to; and each row's position and sequence. Every cache tensor holds
// max_batch sequences (its dim 0 is max_batch · kv_heads), so sequence s's KV head g is head
// s · kv_heads + g of the tensor. Push constants: f = policy | halves << 2 | sinks << 3 (policy
// 0 Static, 1 SlidingWindow, 2 Sink; halves: a Sink cache's model rotates RoPE halves, for
// attention's turn of the query), g window, h = a Sink cache's RoPE width (its sinks' query
// turn) | q4's kv_group << 16.

// Row r of the step: its position and sequence (shaders/common.glsl's StepBlock), and where
// its sequence's step ends (the q4 cache reads positions from there on from its rings).
uint row_position(uint r) {
  return step.rows_are_sequences != 0 ? uint(step.rows[r].y) : uint(step.position) + r;
}
uint row_sequence(uint r) {
  return step.rows_are_sequences != 0 ? uint(step.rows[r].x) : uint(step.sequence);
}
uint row_step_end(uint r) {
  return step.rows_are_sequences != 0 ? row_position(r) + 1u
                                      : uint(step.position) + active_rows();
}

uint kv_policy() { return pc.f & 3u; }
bool kv_rope_halves() { return (pc.f & 4u) != 0u; }
uint kv_sinks() { return pc.f >> 3; }
uint kv_group() { return pc.h >> 16; }

// The slots before a Sink cache's ring: its sinks', rounded up to whole q4 groups (SinkSlots).
uint kv_sink_slots() {
  uint sinks = kv_sinks(), group = kv_group();
  return group > 0u ? (sinks + group - 1u) / group * group : sinks;
}

uint kv_slot(uint position, uint slots) {
  uint policy = kv_policy();
  if (policy == 1u) return position % slots;
  if (policy == 2u) {
    uint kept = kv_sink_slots();
    return position < kept ? position : kept + (position - kept) % (slots - kept);
  }
  return position;
}

// A query at `position` attends to the sinks 0 … sink_end − 1, then begin … position;
// cache_position is where it sits inside the cache (the sinks are scored from there).
struct Attended {
  uint sink_end;
  uint begin;
  uint cache_position;
};

Attended kv_attended(uint position) {
  Attended a = Attended(0u, 0u, 0u);
  uint policy = kv_policy(), window = pc.g, sinks = kv_sinks();
  if (policy == 1u) {
    a.begin = position + 1u > window ? position + 1u - window : 0u;
  } else if (policy == 2u) {
    a.sink_end = min(position + 1u, sinks);
    int recent_begin = int(position) - int(window - sinks) + 1;
    a.begin = uint(max(recent_begin, int(sinks)));
  }
  uint recent = position >= a.begin ? position - a.begin + 1u : 0u;
  a.cache_position = a.sink_end + recent - 1u;
  return a;
}
