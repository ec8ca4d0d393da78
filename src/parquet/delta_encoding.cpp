// Delta encodings (see delta_encoding.h).
#include "delta_encoding.h"

#include "bit_unpacking.h"
#include "swift/core/error.h"

namespace swift::parquet {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw DataError("malformed delta-encoded values: " + what, "the file is damaged; read it with pyarrow to check");
}

uint64_t read_uleb(std::string_view data, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= data.size()) bad("cut short");
    const uint8_t b = static_cast<uint8_t>(data[pos++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  bad("a varint longer than 10 bytes");
}

int64_t read_zigzag(std::string_view data, size_t& pos) {
  const uint64_t v = read_uleb(data, pos);
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace

DeltaIntegers decode_delta_binary_packed(std::string_view data, size_t max_values) {
  size_t pos = 0;
  const uint64_t block_size = read_uleb(data, pos);
  const uint64_t miniblocks = read_uleb(data, pos);
  const uint64_t total = read_uleb(data, pos);
  // Deltas wrap around in 64 bits, as writers compute them.
  uint64_t value = static_cast<uint64_t>(read_zigzag(data, pos));
  if (block_size == 0 || block_size % 128 != 0 || miniblocks == 0 || block_size % miniblocks != 0 ||
      (block_size / miniblocks) % 32 != 0)
    bad("block size " + std::to_string(block_size) + " with " + std::to_string(miniblocks) + " miniblocks");
  if (total > max_values) bad(std::to_string(total) + " values where at most " + std::to_string(max_values) + " fit");
  const uint64_t per_miniblock = block_size / miniblocks;
  DeltaIntegers out;
  out.values.reserve(total);
  if (total > 0) out.values.push_back(static_cast<int64_t>(value));
  while (out.values.size() < total) {
    const uint64_t min_delta = static_cast<uint64_t>(read_zigzag(data, pos));
    if (miniblocks > data.size() - pos) bad("miniblock widths cut short");
    const size_t widths_at = pos;
    pos += miniblocks;
    for (uint64_t m = 0; m < miniblocks && out.values.size() < total; ++m) {
      const int width = static_cast<uint8_t>(data[widths_at + m]);
      if (width > 64) bad("a miniblock of " + std::to_string(width) + "-bit deltas");
      const uint64_t bytes = per_miniblock * width / 8;
      if (bytes > data.size() - pos) bad("a miniblock cut short");
      const std::string_view mini = data.substr(pos, bytes);
      for (uint64_t i = 0; i < per_miniblock && out.values.size() < total; ++i) {
        value += min_delta + unpack_bits(mini, i * width, width);
        out.values.push_back(static_cast<int64_t>(value));
      }
      pos += bytes;  // the last miniblock with values is whole; the unused ones after it take no bytes
    }
  }
  out.end = pos;
  return out;
}

std::vector<std::string> decode_delta_length_byte_array(std::string_view data, size_t count) {
  const DeltaIntegers lengths = decode_delta_binary_packed(data, count);
  if (lengths.values.size() != count) bad(std::to_string(lengths.values.size()) + " lengths for " + std::to_string(count) + " values");
  std::vector<std::string> out;
  out.reserve(count);
  size_t pos = lengths.end;
  for (const int64_t n : lengths.values) {
    if (n < 0 || static_cast<uint64_t>(n) > data.size() - pos) bad("a string runs past the end");
    out.emplace_back(data.substr(pos, n));
    pos += n;
  }
  return out;
}

std::vector<std::string> decode_delta_byte_array(std::string_view data, size_t count) {
  const DeltaIntegers prefixes = decode_delta_binary_packed(data, count);
  if (prefixes.values.size() != count) bad(std::to_string(prefixes.values.size()) + " prefixes for " + std::to_string(count) + " values");
  std::vector<std::string> out = decode_delta_length_byte_array(data.substr(prefixes.end), count);
  for (size_t i = 0; i < count; ++i) {
    const int64_t keep = prefixes.values[i];
    const size_t previous = i == 0 ? 0 : out[i - 1].size();
    if (keep < 0 || static_cast<uint64_t>(keep) > previous) bad("a prefix longer than the value before it");
    if (keep > 0) out[i].insert(0, out[i - 1], 0, keep);
  }
  return out;
}

}  // namespace swift::parquet
