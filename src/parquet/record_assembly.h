// Rows rebuilt from a row group's columns (the record assembly of Google's Dremel paper, which Parquet's levels
// encode): structs become JSON objects, repeated fields and LIST groups arrays, MAP groups objects keyed by the
// key's text; a null or absent optional field is null.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "column_chunk.h"
#include "schema_tree.h"

namespace swift::parquet {

// `columns[i]` holds leaf i of `root`'s tree. DataError when the columns disagree with each other or num_rows.
void assemble_rows(const SchemaNode& root, const std::vector<ColumnValues>& columns, int64_t num_rows,
                   std::vector<nlohmann::json>& out);

}  // namespace swift::parquet
