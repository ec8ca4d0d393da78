// Reading Parquet files (the hubs' usual dataset format) into rows: one JSON object per row, column names as
// keys, nested structs, lists and maps as JSON objects and arrays. No Arrow: Debian 12 packages none, so the
// format is read here (src/parquet/, docs/building.md says why), with Debian's codec libraries.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace swift::parquet {

// Caps that keep a damaged or hostile file from sizing huge allocations (the fuzz harness lowers them).
struct ReadLimits {
  size_t max_page_values = size_t{1} << 24;  // writers put about 20000 rows in a page
  size_t max_page_bytes = size_t{1} << 30;
  size_t max_chunk_values = SIZE_MAX;
};

// Every row of the file, row groups in order. DataError (exit 3) naming the file and, where one is at fault, the
// column, for anything damaged or unsupported (LZO, encrypted files).
std::vector<nlohmann::json> read_parquet_file(const std::filesystem::path& path);

// The same from bytes in memory; `name` is what messages call them.
std::vector<nlohmann::json> read_parquet_bytes(std::string_view bytes, const std::string& name,
                                               const ReadLimits& limits = {});

}  // namespace swift::parquet
