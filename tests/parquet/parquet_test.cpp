// The Parquet reader against pyarrow: every file in tests/assets/parquet (make_parquet_cases.py: each codec, both
// page versions, dictionary/plain/delta/byte-stream-split encodings, nested lists, structs and maps with nulls)
// gives the rows pyarrow reads; the building blocks against the spec's own examples; damaged files give a
// DataError naming the file, never a crash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../../src/parquet/bit_unpacking.h"
#include "../../src/parquet/delta_encoding.h"
#include "../../src/parquet/thrift_compact.h"
#include "swift/core/error.h"
#include "swift/parquet/parquet_file.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace swift;
using namespace swift::parquet;

namespace {

const fs::path kAssets = fs::path(SWIFT_SOURCE_DIR) / "tests/assets/parquet";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json expected_cases() { return json::parse(slurp(kAssets / "expected.json")); }

}  // namespace

TEST(ParquetFile, EveryCaseReadsAsPyarrowDoes) {
  const json cases = expected_cases();
  ASSERT_GE(cases["files"].size(), 15u);
  for (const auto& [file, table] : cases["files"].items()) {
    SCOPED_TRACE(file);
    const auto rows = read_parquet_file(kAssets / file);
    const json& want = cases["tables"][table.get<std::string>()];
    ASSERT_EQ(rows.size(), want.size());
    for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i], want[i]) << "row " << i << ": " << rows[i].dump();
  }
}

TEST(ParquetFile, ChatRowsKeepTheirShape) {
  const auto rows = read_parquet_file(kAssets / "chat_default.parquet");
  ASSERT_EQ(rows.size(), 90u);
  EXPECT_TRUE(rows[1]["system"].is_null());
  EXPECT_TRUE(rows[0]["system"].is_string());
  ASSERT_TRUE(rows[0]["messages"].is_array());
  EXPECT_EQ(rows[0]["messages"][0]["role"], "user");
  EXPECT_EQ(rows[0]["messages"][1]["role"], "assistant");
}

TEST(ThriftCompact, FieldsListsAndSkipping) {
  // struct { 1: i32 = -3, 3: string "ab", 20 (long form): list<i32> [1, 2], 21: struct { 1: bool true } }
  const std::string bytes = {0x15, 0x05, 0x28, 0x02, 'a', 'b', 0x09, 0x28, 0x25, 0x02, 0x04, 0x1C, 0x11, 0x00, 0x00};
  CompactReader r(bytes);
  std::vector<int> ids;
  int32_t i = 0;
  std::string s;
  std::vector<int64_t> list;
  r.read_struct([&](const CompactReader::Field& f) {
    ids.push_back(f.id);
    if (f.id == 1) i = r.read_i32(f.type);
    else if (f.id == 3) s = r.read_binary();
    else if (f.id == 20) {
      const auto h = r.read_list_header();
      for (size_t k = 0; k < h.size; ++k) list.push_back(r.read_int(h.element_type));
    } else r.skip(f.type);
  });
  EXPECT_EQ(ids, (std::vector<int>{1, 3, 20, 21}));
  EXPECT_EQ(i, -3);
  EXPECT_EQ(s, "ab");
  EXPECT_EQ(list, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.position(), bytes.size());

  // A list claiming more elements than bytes, a string running past the end, nesting too deep: DataError.
  // (The reader views its bytes: each buffer is a named string that outlives its reader.)
  const std::string lying_bytes = {0x19, static_cast<char>(0xF5), 0x7F};
  CompactReader lying(lying_bytes);
  EXPECT_THROW(lying.read_struct([&](const CompactReader::Field& f) { lying.skip(f.type); }), DataError);
  const std::string long_string_bytes = {0x18, 0x09, 'a'};
  CompactReader long_string(long_string_bytes);
  EXPECT_THROW(long_string.read_struct([&](const CompactReader::Field& f) { long_string.skip(f.type); }), DataError);
  const std::string deep_bytes(100, 0x1C);
  CompactReader deep(deep_bytes);
  EXPECT_THROW(deep.read_struct([&](const CompactReader::Field& f) { deep.skip(f.type); }), DataError);
}

TEST(ParquetEncodings, RleBitPackedHybridAsTheSpecWritesIt) {
  // Encodings.md's bit-packing example: 0..7 with width 3 is 0x88 0xC6 0xFA, preceded by header (1 group << 1 | 1).
  const std::string packed = {0x03, static_cast<char>(0x88), static_cast<char>(0xC6), static_cast<char>(0xFA)};
  std::vector<uint32_t> out(8);
  RleBitPackedDecoder(packed, 3).read(out.data(), 8);
  EXPECT_EQ(out, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // An RLE run (5 << 1) of the value 4, then the packed run.
  const std::string mixed = std::string{0x0A, 0x04} + packed;
  std::vector<uint32_t> both(13);
  RleBitPackedDecoder(mixed, 3).read(both.data(), 13);
  EXPECT_EQ(both, (std::vector<uint32_t>{4, 4, 4, 4, 4, 0, 1, 2, 3, 4, 5, 6, 7}));
  std::vector<uint32_t> too_many(14);
  EXPECT_THROW(RleBitPackedDecoder(mixed, 3).read(too_many.data(), 14), DataError);
}

TEST(ParquetEncodings, DeltaBinaryPackedAsTheSpecWritesIt) {
  // Encodings.md's example 1: 1..5 (deltas all 1): block 128, 4 miniblocks, 5 values, first 1 (zigzag 2),
  // min delta 1 (zigzag 2), widths 0 0 0 0: nothing packed.
  const std::string bytes = {static_cast<char>(0x80), 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
  const DeltaIntegers d = decode_delta_binary_packed(bytes, 100);
  EXPECT_EQ(d.values, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(d.end, bytes.size());
  EXPECT_THROW(decode_delta_binary_packed(bytes, 4), DataError);  // more values than the page holds
  const std::string bad_block = {0x07, 0x04, 0x05, 0x02};
  EXPECT_THROW(decode_delta_binary_packed(bad_block, 100), DataError);
}

TEST(ParquetFile, DamageIsADataErrorNamingTheFile) {
  const std::string good = slurp(kAssets / "nested.parquet");
  auto message_of = [](const std::string& bytes) {
    try {
      read_parquet_bytes(bytes, "x.parquet");
    } catch (const DataError& e) {
      return std::string(e.message());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of("PAR1").find("x.parquet: not a Parquet file"), std::string::npos);
  EXPECT_NE(message_of(good.substr(0, good.size() - 100)).find("cut short"), std::string::npos);
  std::string encrypted = good;
  encrypted.replace(encrypted.size() - 4, 4, "PARE");
  EXPECT_NE(message_of(encrypted).find("encrypted"), std::string::npos);
  // A page header inside the data cut: the message names the column.
  std::string damaged = good;
  for (size_t i = 4; i < 60; ++i) damaged[i] = static_cast<char>(0xFF);
  EXPECT_NE(message_of(damaged).find("column '"), std::string::npos) << message_of(damaged);

  // Every single-byte change and every cut of a small file: rows or a DataError, never anything else.
  const std::string small = slurp(kAssets / "query_response.parquet");
  ReadLimits limits;
  limits.max_page_values = 4096;
  limits.max_chunk_values = 100000;
  size_t errors = 0;
  for (size_t i = 0; i < small.size(); ++i) {
    for (const char flip : {char(0xFF), char(0x00), char(0x7F)}) {
      std::string bytes = small;
      bytes[i] = flip;
      try {
        read_parquet_bytes(bytes, "x.parquet", limits);
      } catch (const DataError&) {
        ++errors;
      }
    }
    try {
      read_parquet_bytes(small.substr(0, i), "x.parquet", limits);
      ADD_FAILURE() << "a file cut to " << i << " bytes was read";
    } catch (const DataError&) {
    }
  }
  EXPECT_GT(errors, 0u);
}
