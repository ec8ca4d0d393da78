// A data page's values (the non-null ones) in any of Parquet's value encodings: PLAIN, dictionary indices
// (PLAIN_DICTIONARY / RLE_DICTIONARY), RLE booleans, the DELTA_* encodings and BYTE_STREAM_SPLIT, turned into JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <string_view>
#include <vector>

#include "parquet_metadata.h"
#include "value_conversion.h"

namespace swift::parquet {

struct LeafType {
  PhysicalType physical = PhysicalType::kBoolean;
  int32_t type_length = 0;  // FIXED_LEN_BYTE_ARRAY's width
  ValueConverter converter;
};

// Appends `count` values decoded from `data` to `out`. `dictionary` is the column chunk's dictionary page (null
// before one was read). DataError when the data is short or the encoding does not fit the type.
void decode_values(Encoding encoding, const LeafType& leaf, std::string_view data, size_t count,
                   const std::vector<nlohmann::json>* dictionary, std::vector<nlohmann::json>& out);

}  // namespace swift::parquet
