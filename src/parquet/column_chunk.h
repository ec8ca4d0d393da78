// One column chunk of a row group read whole: its pages (dictionary, data v1 and v2) decompressed and decoded
// into repetition levels, definition levels and the non-null values, in order.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

#include "parquet_metadata.h"
#include "swift/parquet/parquet_file.h"
#include "value_decoding.h"

namespace swift::parquet {

struct ColumnLeaf {
  LeafType type;
  int max_definition = 0;
  int max_repetition = 0;
};

struct ColumnValues {
  std::vector<uint16_t> repetition;  // one per entry; empty when max_repetition is 0 (all 0)
  std::vector<uint16_t> definition;  // one per entry; empty when max_definition is 0 (all defined)
  std::vector<nlohmann::json> values;  // the entries whose definition is the maximum
  size_t entries = 0;
};

// `file` is the whole file; the chunk's bytes are located by its metadata and checked to lie inside the data.
ColumnValues read_column_chunk(std::string_view file, size_t data_end, const ColumnMetaData& meta,
                               const ColumnLeaf& leaf, const ReadLimits& limits);

}  // namespace swift::parquet
