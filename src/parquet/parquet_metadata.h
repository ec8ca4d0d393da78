// Parquet's metadata as this reader needs it: the footer (FileMetaData: schema, row groups, column chunks) and
// page headers, read from Thrift's compact protocol. Field numbers follow parquet-format's parquet.thrift; fields
// this reader never uses (statistics, indexes, encryption keys) are skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "thrift_compact.h"

namespace swift::parquet {

enum class PhysicalType { kBoolean = 0, kInt32 = 1, kInt64 = 2, kInt96 = 3, kFloat = 4, kDouble = 5, kByteArray = 6,
                          kFixedLenByteArray = 7 };
enum class Repetition { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum class Encoding { kPlain = 0, kPlainDictionary = 2, kRle = 3, kBitPacked = 4, kDeltaBinaryPacked = 5,
                      kDeltaLengthByteArray = 6, kDeltaByteArray = 7, kRleDictionary = 8, kByteStreamSplit = 9 };
enum class Codec { kUncompressed = 0, kSnappy = 1, kGzip = 2, kLzo = 3, kBrotli = 4, kLz4 = 5, kZstd = 6, kLz4Raw = 7 };
enum class PageType { kData = 0, kIndex = 1, kDictionary = 2, kDataV2 = 3 };

// The ConvertedType values this reader acts on (the older annotation, still written beside LogicalType).
enum ConvertedType : int {
  kUtf8 = 0, kMap = 1, kMapKeyValue = 2, kList = 3, kEnum = 4, kDecimal = 5, kDate = 6, kJson = 19, kBson = 20,
};
// LogicalType is a union: the number of its member says which annotation it is.
enum LogicalKind : int {
  kLogicalNone = 0, kLogicalString = 1, kLogicalMap = 2, kLogicalList = 3, kLogicalEnum = 4, kLogicalDecimal = 5,
  kLogicalDate = 6, kLogicalTime = 7, kLogicalTimestamp = 8, kLogicalInteger = 10, kLogicalUnknown = 11,
  kLogicalJson = 12, kLogicalBson = 13, kLogicalUuid = 14, kLogicalFloat16 = 15,
};

struct SchemaElement {
  std::optional<PhysicalType> type;  // absent for groups
  int32_t type_length = 0;           // FIXED_LEN_BYTE_ARRAY's width
  std::optional<Repetition> repetition;
  std::string name;
  int32_t num_children = 0;
  std::optional<int> converted_type;
  int32_t scale = 0;                 // DECIMAL (from either annotation)
  int logical = kLogicalNone;
  bool integer_signed = true;        // INTEGER(bitWidth, isSigned)
};

struct ColumnMetaData {
  PhysicalType type = PhysicalType::kBoolean;
  std::vector<std::string> path;     // path_in_schema
  Codec codec = Codec::kUncompressed;
  int64_t num_values = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
};

struct RowGroup {
  std::vector<ColumnMetaData> columns;  // one per leaf of the schema, in schema order
  int64_t num_rows = 0;
};

struct FileMetaData {
  std::vector<SchemaElement> schema;  // depth-first, the root first
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  bool encrypted = false;             // column chunks carry crypto metadata
};

struct PageHeader {
  PageType type = PageType::kData;
  int32_t uncompressed_size = 0;
  int32_t compressed_size = 0;
  int32_t num_values = 0;
  Encoding encoding = Encoding::kPlain;
  Encoding definition_level_encoding = Encoding::kRle;  // v1 data pages
  Encoding repetition_level_encoding = Encoding::kRle;
  int32_t num_nulls = 0;                                // v2 data pages
  int32_t definition_levels_length = 0;
  int32_t repetition_levels_length = 0;
  bool values_compressed = true;
};

// The footer's FileMetaData (the bytes between the data and the trailing length + "PAR1").
FileMetaData read_file_metadata(std::string_view footer, size_t file_offset);

// One page header at the reader's position (the page body follows it).
PageHeader read_page_header(CompactReader& reader);

const char* encoding_name(Encoding e);
const char* codec_name(Codec c);

}  // namespace swift::parquet
