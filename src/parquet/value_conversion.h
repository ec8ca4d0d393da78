// How a leaf column's physical values become JSON, its annotation applied: strings (UTF-8 checked), signed and
// unsigned integers, decimals as numbers, UUIDs as text, FLOAT16 as numbers; binary that is not UTF-8 becomes
// base64 text, and dates, times and timestamps stay integers in the file's unit (docs/datasets.md).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string_view>

#include "parquet_metadata.h"

namespace swift::parquet {

class ValueConverter {
 public:
  explicit ValueConverter(const SchemaElement& leaf);

  nlohmann::json from_bool(bool v) const;
  nlohmann::json from_int32(int32_t v) const;
  nlohmann::json from_int64(int64_t v) const;
  nlohmann::json from_int96(std::string_view twelve_bytes) const;  // nanoseconds since the epoch
  nlohmann::json from_float(float v) const;
  nlohmann::json from_double(double v) const;
  nlohmann::json from_bytes(std::string_view v) const;  // BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY

 private:
  bool is_text_ = false, is_decimal_ = false, is_unsigned_ = false, is_uuid_ = false, is_float16_ = false;
  int32_t scale_ = 0;
};

}  // namespace swift::parquet
