// Decompressing a Parquet page body with the column chunk's codec: Snappy, GZIP (zlib), ZSTD, Brotli and LZ4_RAW,
// each through Debian's library for it. LZO and the deprecated Hadoop-framed LZ4 are refused by name.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "parquet_metadata.h"

namespace swift::parquet {

// Largest page body this reader will inflate: pyarrow writes pages of about 1 MiB; a header claiming more than
// this is damaged (and must not size an allocation).
constexpr size_t kMaxPageBytes = size_t{1} << 30;

// The body decompressed to exactly `uncompressed_size` bytes, or DataError naming the codec.
std::string decompress_page(Codec codec, std::string_view compressed, size_t uncompressed_size);

}  // namespace swift::parquet
