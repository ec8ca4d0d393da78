// Parquet's delta encodings: DELTA_BINARY_PACKED (integers), DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY
// (strings: lengths, then prefixes shared with the previous value). Spec: parquet-format's Encodings.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swift::parquet {

struct DeltaIntegers {
  std::vector<int64_t> values;
  size_t end = 0;  // bytes the encoding took (what follows it starts there)
};

// All values of a DELTA_BINARY_PACKED stream at the start of `data` (at most `max_values` of them).
DeltaIntegers decode_delta_binary_packed(std::string_view data, size_t max_values);

// `count` strings of DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY data.
std::vector<std::string> decode_delta_length_byte_array(std::string_view data, size_t count);
std::vector<std::string> decode_delta_byte_array(std::string_view data, size_t count);

}  // namespace swift::parquet
