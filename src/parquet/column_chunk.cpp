// Reading a column chunk's pages (see column_chunk.h).
#include "column_chunk.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "bit_unpacking.h"
#include "page_codec.h"
#include "swift/core/error.h"

namespace swift::parquet {
namespace {

[[noreturn]] void damaged(const std::string& what) {
  throw DataError(what, "the file is damaged or cut short; read it with pyarrow to check");
}

uint32_t load_u32(std::string_view data) {
  uint32_t v;
  std::memcpy(&v, data.data(), 4);
  return v;
}

// Appends `count` levels (each <= max_level) decoded from `data` (the hybrid without a length prefix).
void decode_levels(std::string_view data, size_t count, int max_level, std::vector<uint16_t>& out) {
  std::vector<uint32_t> levels(count);
  RleBitPackedDecoder(data, bit_width_of(static_cast<uint32_t>(max_level))).read(levels.data(), count);
  for (const uint32_t l : levels) {
    if (l > static_cast<uint32_t>(max_level))
      damaged("a level of " + std::to_string(l) + " where the schema allows at most " + std::to_string(max_level));
    out.push_back(static_cast<uint16_t>(l));
  }
}

// A v1 page's levels: RLE with a 4-byte length, or the deprecated BIT_PACKED (most significant bit first).
// Returns the bytes they took.
size_t decode_v1_levels(std::string_view data, Encoding encoding, size_t count, int max_level, std::vector<uint16_t>& out) {
  if (encoding == Encoding::kRle) {
    if (data.size() < 4 || load_u32(data) > data.size() - 4) damaged("a page's levels are cut short");
    const uint32_t n = load_u32(data);
    decode_levels(data.substr(4, n), count, max_level, out);
    return 4 + n;
  }
  if (encoding == Encoding::kBitPacked) {
    const int width = bit_width_of(static_cast<uint32_t>(max_level));
    const size_t bytes = (count * width + 7) / 8;
    if (bytes > data.size()) damaged("a page's levels are cut short");
    for (size_t i = 0; i < count; ++i) {
      uint32_t v = 0;
      for (int b = 0; b < width; ++b) {
        const size_t bit = i * width + b;
        v = (v << 1) | ((static_cast<uint8_t>(data[bit / 8]) >> (7 - bit % 8)) & 1);
      }
      if (v > static_cast<uint32_t>(max_level)) damaged("a level past the schema's maximum");
      out.push_back(static_cast<uint16_t>(v));
    }
    return bytes;
  }
  throw DataError(std::string("levels encoded as ") + encoding_name(encoding) + " are not supported",
                  "rewrite the file with pyarrow");
}

size_t count_defined(const std::vector<uint16_t>& definition, size_t from, int max_definition) {
  if (max_definition == 0) return 0;
  return static_cast<size_t>(std::count(definition.begin() + from, definition.end(), static_cast<uint16_t>(max_definition)));
}

}  // namespace

ColumnValues read_column_chunk(std::string_view file, size_t data_end, const ColumnMetaData& meta,
                               const ColumnLeaf& leaf, const ReadLimits& limits) {
  int64_t start = meta.data_page_offset;
  // Some writers store 0 for "no dictionary"; a real dictionary page comes before the data pages.
  if (meta.dictionary_page_offset && *meta.dictionary_page_offset > 0 && *meta.dictionary_page_offset < start)
    start = *meta.dictionary_page_offset;
  if (start < 4 || meta.total_compressed_size <= 0 || static_cast<uint64_t>(start) > data_end ||
      static_cast<uint64_t>(meta.total_compressed_size) > data_end - static_cast<uint64_t>(start))
    damaged("the column chunk at byte " + std::to_string(start) + " (" + std::to_string(meta.total_compressed_size) +
            " bytes) lies outside the file's data");
  const std::string_view chunk = file.substr(static_cast<size_t>(start), static_cast<size_t>(meta.total_compressed_size));

  ColumnValues column;
  std::vector<nlohmann::json> dictionary;
  bool has_dictionary = false;
  int64_t seen = 0;
  size_t pos = 0;
  while (seen < meta.num_values && pos < chunk.size()) {
    CompactReader reader(chunk.substr(pos), "page header", static_cast<size_t>(start) + pos);
    const PageHeader page = read_page_header(reader);
    pos += reader.position();
    if (page.compressed_size < 0 || static_cast<size_t>(page.compressed_size) > chunk.size() - pos ||
        page.uncompressed_size < 0 || static_cast<size_t>(page.uncompressed_size) > limits.max_page_bytes)
      damaged("a page of " + std::to_string(page.compressed_size) + " bytes runs past its column chunk");
    const std::string_view body = chunk.substr(pos, static_cast<size_t>(page.compressed_size));
    pos += static_cast<size_t>(page.compressed_size);
    if (page.num_values < 0 || static_cast<size_t>(page.num_values) > limits.max_page_values)
      damaged("a page of " + std::to_string(page.num_values) + " values (at most " +
              std::to_string(limits.max_page_values) + " are read)");
    const size_t n = static_cast<size_t>(page.num_values);
    if (n > limits.max_chunk_values - column.entries)
      damaged("a column chunk of more than " + std::to_string(limits.max_chunk_values) + " values");

    if (page.type == PageType::kIndex) continue;
    if (page.type == PageType::kDictionary) {
      if (has_dictionary) damaged("a column chunk has two dictionary pages");
      const std::string plain = decompress_page(meta.codec, body, static_cast<size_t>(page.uncompressed_size));
      decode_values(Encoding::kPlain, leaf.type, plain, n, nullptr, dictionary);
      has_dictionary = true;
      continue;
    }

    const size_t first = column.entries;
    std::string values_storage;
    std::string_view values;
    if (page.type == PageType::kData) {
      values_storage = decompress_page(meta.codec, body, static_cast<size_t>(page.uncompressed_size));
      std::string_view rest = values_storage;
      if (leaf.max_repetition > 0)
        rest.remove_prefix(decode_v1_levels(rest, page.repetition_level_encoding, n, leaf.max_repetition, column.repetition));
      if (leaf.max_definition > 0)
        rest.remove_prefix(decode_v1_levels(rest, page.definition_level_encoding, n, leaf.max_definition, column.definition));
      values = rest;
    } else {  // v2: levels uncompressed in front, then the (maybe compressed) values
      const int64_t levels = int64_t{page.repetition_levels_length} + page.definition_levels_length;
      if (page.repetition_levels_length < 0 || page.definition_levels_length < 0 || levels > page.compressed_size ||
          levels > page.uncompressed_size)
        damaged("a v2 page's levels are longer than the page");
      if (leaf.max_repetition > 0)
        decode_levels(body.substr(0, page.repetition_levels_length), n, leaf.max_repetition, column.repetition);
      if (leaf.max_definition > 0)
        decode_levels(body.substr(page.repetition_levels_length, page.definition_levels_length), n,
                      leaf.max_definition, column.definition);
      const std::string_view packed = body.substr(static_cast<size_t>(levels));
      const size_t unpacked = static_cast<size_t>(page.uncompressed_size - levels);
      if (page.values_compressed) {
        values_storage = decompress_page(meta.codec, packed, unpacked);
        values = values_storage;
      } else {
        values = packed;
      }
    }
    column.entries += n;
    const size_t non_null = leaf.max_definition == 0 ? n : count_defined(column.definition, first, leaf.max_definition);
    decode_values(page.encoding, leaf.type, values, non_null, has_dictionary ? &dictionary : nullptr, column.values);
    seen += page.num_values;
  }
  if (seen != meta.num_values)
    damaged("the column chunk holds " + std::to_string(seen) + " values where its metadata says " +
            std::to_string(meta.num_values));
  return column;
}

}  // namespace swift::parquet
