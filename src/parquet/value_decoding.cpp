// Value encodings (see value_decoding.h; spec: parquet-format's Encodings.md).
#include "value_decoding.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>

#include "bit_unpacking.h"
#include "delta_encoding.h"
#include "swift/core/error.h"

namespace swift::parquet {
namespace {

using json = nlohmann::json;

[[noreturn]] void short_data(size_t count) {
  throw DataError("a page holds fewer than its " + std::to_string(count) + " values",
                  "the file is damaged; read it with pyarrow to check");
}

const char* type_name(PhysicalType t) {
  static const char* kNames[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return kNames[static_cast<int>(t)];
}

// Bytes per value of the fixed-width types (0 for BOOLEAN and BYTE_ARRAY).
size_t fixed_width(const LeafType& leaf) {
  switch (leaf.physical) {
    case PhysicalType::kInt32:
    case PhysicalType::kFloat: return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble: return 8;
    case PhysicalType::kInt96: return 12;
    case PhysicalType::kFixedLenByteArray: return static_cast<size_t>(leaf.type_length);
    default: return 0;
  }
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// One fixed-width value from its little-endian bytes.
json fixed_value(const LeafType& leaf, const char* p) {
  const ValueConverter& c = leaf.converter;
  switch (leaf.physical) {
    case PhysicalType::kInt32: return c.from_int32(load<int32_t>(p));
    case PhysicalType::kInt64: return c.from_int64(load<int64_t>(p));
    case PhysicalType::kInt96: return c.from_int96(std::string_view(p, 12));
    case PhysicalType::kFloat: return c.from_float(load<float>(p));
    case PhysicalType::kDouble: return c.from_double(load<double>(p));
    default: return c.from_bytes(std::string_view(p, static_cast<size_t>(leaf.type_length)));
  }
}

void decode_plain(const LeafType& leaf, std::string_view data, size_t count, std::vector<json>& out) {
  if (leaf.physical == PhysicalType::kBoolean) {
    if (count > data.size() * 8) short_data(count);
    for (size_t i = 0; i < count; ++i) out.push_back(leaf.converter.from_bool((static_cast<uint8_t>(data[i / 8]) >> (i % 8)) & 1));
    return;
  }
  if (leaf.physical == PhysicalType::kByteArray) {
    size_t pos = 0;
    for (size_t i = 0; i < count; ++i) {
      if (data.size() - pos < 4) short_data(count);
      const uint32_t n = load<uint32_t>(data.data() + pos);
      pos += 4;
      if (n > data.size() - pos) short_data(count);
      out.push_back(leaf.converter.from_bytes(data.substr(pos, n)));
      pos += n;
    }
    return;
  }
  const size_t width = fixed_width(leaf);
  if (width == 0 ? count > 0 : count > data.size() / width) short_data(count);
  for (size_t i = 0; i < count; ++i) out.push_back(fixed_value(leaf, data.data() + i * width));
}

void decode_dictionary_indices(std::string_view data, size_t count, const std::vector<json>* dictionary,
                               std::vector<json>& out) {
  SWIFT_CHECK(dictionary != nullptr, DataError, "a dictionary-encoded page comes before any dictionary page",
              "the file is damaged; read it with pyarrow to check");
  if (count == 0) return;
  if (data.empty()) short_data(count);
  const int width = static_cast<uint8_t>(data[0]);
  std::vector<uint32_t> indices(count);
  RleBitPackedDecoder(data.substr(1), width).read(indices.data(), count);
  for (const uint32_t i : indices) {
    SWIFT_CHECK(i < dictionary->size(), DataError,
                "dictionary index " + std::to_string(i) + " is past the dictionary's " + std::to_string(dictionary->size()) + " values",
                "the file is damaged; read it with pyarrow to check");
    out.push_back((*dictionary)[i]);
  }
}

void decode_byte_stream_split(const LeafType& leaf, std::string_view data, size_t count, std::vector<json>& out) {
  const size_t width = fixed_width(leaf);
  if (width == 0 ? count > 0 : count > data.size() / width) short_data(count);
  std::string value(width, '\0');
  for (size_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < width; ++k) value[k] = data[k * count + i];
    out.push_back(fixed_value(leaf, value.data()));
  }
}

}  // namespace

void decode_values(Encoding encoding, const LeafType& leaf, std::string_view data, size_t count,
                   const std::vector<json>* dictionary, std::vector<json>& out) {
  const PhysicalType t = leaf.physical;
  const bool is_integer = t == PhysicalType::kInt32 || t == PhysicalType::kInt64;
  const bool is_bytes = t == PhysicalType::kByteArray || t == PhysicalType::kFixedLenByteArray;
  switch (encoding) {
    case Encoding::kPlain: return decode_plain(leaf, data, count, out);
    case Encoding::kPlainDictionary:
    case Encoding::kRleDictionary: return decode_dictionary_indices(data, count, dictionary, out);
    case Encoding::kRle:
      if (t != PhysicalType::kBoolean) break;
      {  // a 4-byte length, then the hybrid with width 1
        if (data.size() < 4) short_data(count);
        const uint32_t n = load<uint32_t>(data.data());
        if (n > data.size() - 4) short_data(count);
        std::vector<uint32_t> bits(count);
        RleBitPackedDecoder(data.substr(4, n), 1).read(bits.data(), count);
        for (const uint32_t b : bits) out.push_back(leaf.converter.from_bool(b != 0));
        return;
      }
    case Encoding::kDeltaBinaryPacked:
      if (!is_integer) break;
      {
        const DeltaIntegers ints = decode_delta_binary_packed(data, count);
        if (ints.values.size() != count) short_data(count);
        for (const int64_t v : ints.values)
          out.push_back(t == PhysicalType::kInt32 ? leaf.converter.from_int32(static_cast<int32_t>(v)) : leaf.converter.from_int64(v));
        return;
      }
    case Encoding::kDeltaLengthByteArray:
    case Encoding::kDeltaByteArray:
      if (!is_bytes) break;
      for (const auto& s : encoding == Encoding::kDeltaByteArray ? decode_delta_byte_array(data, count)
                                                                 : decode_delta_length_byte_array(data, count)) {
        SWIFT_CHECK(t == PhysicalType::kByteArray || s.size() == static_cast<size_t>(leaf.type_length), DataError,
                    "a fixed-length value of " + std::to_string(s.size()) + " bytes where the schema says " +
                        std::to_string(leaf.type_length), "the file is damaged; read it with pyarrow to check");
        out.push_back(leaf.converter.from_bytes(s));
      }
      return;
    case Encoding::kByteStreamSplit:
      if (fixed_width(leaf) == 0 || t == PhysicalType::kInt96) break;
      return decode_byte_stream_split(leaf, data, count, out);
    default: break;
  }
  throw DataError(std::string("values of type ") + type_name(t) + " encoded as " + encoding_name(encoding) +
                      " are not supported",
                  "rewrite the file with pyarrow's default encodings, e.g. `python -c \"import pyarrow.parquet as pq; "
                  "pq.write_table(pq.read_table('in.parquet'), 'out.parquet')\"`");
}

}  // namespace swift::parquet
