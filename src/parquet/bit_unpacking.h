// Parquet's integer packings: the RLE / bit-packing hybrid (definition and repetition levels, dictionary indices,
// booleans) and little-endian bit unpacking, shared by the hybrid and DELTA_BINARY_PACKED.
// Spec: parquet-format's Encodings.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace swift::parquet {

// The `width`-bit value (width <= 64) starting at bit `bit` of `data`, least significant bit first.
// DataError when it runs past the end.
uint64_t unpack_bits(std::string_view data, uint64_t bit, int width);

// Decodes the RLE / bit-packing hybrid of `width`-bit values (no length prefix: the caller strips it).
class RleBitPackedDecoder {
 public:
  RleBitPackedDecoder(std::string_view data, int width);
  RleBitPackedDecoder(std::string&&, int) = delete;  // it only views its bytes: keep them alive

  // Fills out[0..n); DataError when the data holds fewer values.
  void read(uint32_t* out, size_t n);

 private:
  bool next_run();

  std::string_view data_;
  size_t pos_ = 0;
  int width_;
  // The current run: `left` values, either `repeated` (RLE) or bit-packed from bit `packed_bit` on.
  size_t left_ = 0;
  bool is_packed_ = false;
  uint32_t repeated_ = 0;
  uint64_t packed_bit_ = 0;
};

// Bits needed to hold every value up to `max_value` (the width of levels whose largest is max_value).
int bit_width_of(uint32_t max_value);

}  // namespace swift::parquet
