// A small, valid GGUF file holding every metadata value type and one tensor of each type
// staticlm supports, with known contents: the seed of the round-trip, truncation and
// corruption tests. Test-only: allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/support/gguf_writer.h"

namespace staticlm::test {

// Shapes (ggml order) of the sample's tensors, by name:
//   t_f32 {4, 2}, t_f16 {8}, t_bf16 {4}, t_q8_0 {32, 2}, t_q4_0 {32}, t_q4_1 {64}, t_i32 {3}
// Tensor data bytes are (index * 37 + byte position) & 0xff; see SampleTensorByte.
GgufWriter SampleGgufWriter();
std::vector<uint8_t> SampleGguf();
uint8_t SampleTensorByte(size_t tensor_index, size_t byte);

}  // namespace staticlm::test
