// RLE / bit-packing hybrid and bit unpacking (see bit_unpacking.h).
#include "bit_unpacking.h"

#include <algorithm>
#include <string>

#include "swift/core/error.h"

namespace swift::parquet {
namespace {

[[noreturn]] void cut_short(const std::string& what) {
  throw DataError("encoded values are cut short: " + what, "the file is damaged; read it with pyarrow to check");
}

}  // namespace

uint64_t unpack_bits(std::string_view data, uint64_t bit, int width) {
  if (width == 0) return 0;
  const uint64_t last_bit = bit + static_cast<uint64_t>(width) - 1;
  if (last_bit / 8 >= data.size()) cut_short("bit-packed values run past the end");
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
  unsigned __int128 acc = 0;
  const uint64_t first = bit / 8, last = last_bit / 8;
  for (uint64_t b = last + 1; b-- > first;) acc = (acc << 8) | bytes[b];
  acc >>= bit % 8;
  return width == 64 ? static_cast<uint64_t>(acc) : static_cast<uint64_t>(acc) & ((uint64_t{1} << width) - 1);
}

int bit_width_of(uint32_t max_value) {
  int w = 0;
  while (max_value >> w) ++w;
  return w;
}

RleBitPackedDecoder::RleBitPackedDecoder(std::string_view data, int width) : data_(data), width_(width) {
  SWIFT_CHECK(width >= 0 && width <= 32, DataError, "a bit width of " + std::to_string(width) + " in RLE data",
              "the file is damaged; read it with pyarrow to check");
}

bool RleBitPackedDecoder::next_run() {
  if (pos_ >= data_.size()) return false;
  uint64_t header = 0;
  for (int shift = 0;; shift += 7) {
    if (pos_ >= data_.size() || shift > 35) cut_short("an RLE run header");
    const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
    header |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) break;
  }
  if (header & 1) {  // bit-packed: (header >> 1) groups of 8 values
    const uint64_t groups = header >> 1;
    const uint64_t bytes = groups * static_cast<uint64_t>(width_);
    if (bytes > data_.size() - pos_) {
      // Writers may end the last run early: take the whole values that are there.
      left_ = (data_.size() - pos_) * 8 / (width_ == 0 ? 1 : width_);
      if (width_ == 0) left_ = groups * 8;
    } else {
      left_ = groups * 8;
    }
    is_packed_ = true;
    packed_bit_ = pos_ * 8;
    pos_ = bytes > data_.size() - pos_ ? data_.size() : pos_ + bytes;
  } else {  // RLE: one value repeated (header >> 1) times, in ceil(width / 8) bytes
    left_ = header >> 1;
    const size_t value_bytes = (width_ + 7) / 8;
    if (value_bytes > data_.size() - pos_) cut_short("an RLE run's value");
    uint32_t v = 0;
    for (size_t i = 0; i < value_bytes; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += value_bytes;
    is_packed_ = false;
    repeated_ = v;
  }
  return true;
}

void RleBitPackedDecoder::read(uint32_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    if (left_ == 0 && !next_run()) cut_short(std::to_string(done) + " of " + std::to_string(n) + " values");
    const size_t take = std::min(left_, n - done);
    if (is_packed_) {
      for (size_t i = 0; i < take; ++i) {
        out[done + i] = static_cast<uint32_t>(unpack_bits(data_, packed_bit_, width_));
        packed_bit_ += width_;
      }
    } else {
      std::fill(out + done, out + done + take, repeated_);
    }
    left_ -= take;
    done += take;
  }
}

}  // namespace swift::parquet
