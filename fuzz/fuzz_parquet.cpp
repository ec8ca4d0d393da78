// Parquet files (src/parquet/) on any bytes: read with low caps on page sizes (a page may claim millions of
// values in a few bytes of RLE; real files stay far below the caps), and every row written back as JSON text,
// which also checks that no text value the reader let through is invalid UTF-8.
#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "swift/core/error.h"
#include "swift/parquet/parquet_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  swift::parquet::ReadLimits limits;
  limits.max_page_values = 1 << 14;
  limits.max_page_bytes = 1 << 24;
  limits.max_chunk_values = 1 << 16;
  try {
    for (const auto& row : swift::parquet::read_parquet_bytes(
             std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.parquet", limits))
      (void)row.dump();
  } catch (const swift::UserError&) {
  }
  return 0;
}
