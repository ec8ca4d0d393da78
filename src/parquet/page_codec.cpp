// Page decompression (see page_codec.h).
#include "page_codec.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <climits>

#include "swift/core/error.h"

namespace swift::parquet {
namespace {

[[noreturn]] void corrupt(Codec codec, const std::string& what) {
  throw DataError(std::string("a ") + codec_name(codec) + " page does not decompress: " + what,
                  "the file is damaged; read it with pyarrow to check, or convert it to .jsonl");
}

// GZIP pages are gzip members (zlib inflate with header detection); several members may follow each other.
size_t gunzip(std::string_view in, std::string& out) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) corrupt(Codec::kGzip, "zlib could not start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = Z_OK;
  while (true) {
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END && z.avail_in > 0 && z.avail_out > 0) {
      inflateReset(&z);
      continue;
    }
    break;
  }
  const size_t produced = out.size() - z.avail_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END && !(rc == Z_OK && z.avail_out == 0)) corrupt(Codec::kGzip, z.msg ? z.msg : "bad data");
  return produced;
}

}  // namespace

std::string decompress_page(Codec codec, std::string_view in, size_t uncompressed_size) {
  if (codec == Codec::kUncompressed) {
    if (in.size() != uncompressed_size)
      corrupt(codec, std::to_string(in.size()) + " bytes where the header says " + std::to_string(uncompressed_size));
    return std::string(in);
  }
  if (uncompressed_size > kMaxPageBytes || in.size() > UINT_MAX)
    corrupt(codec, "a page of " + std::to_string(uncompressed_size) + " bytes is larger than any writer makes");
  std::string out(uncompressed_size, '\0');
  size_t produced = 0;
  switch (codec) {
    case Codec::kSnappy: {
      size_t n = 0;
      if (snappy_uncompressed_length(in.data(), in.size(), &n) != SNAPPY_OK || n != uncompressed_size)
        corrupt(codec, "its length header disagrees with the page header");
      if (snappy_uncompress(in.data(), in.size(), out.data(), &n) != SNAPPY_OK) corrupt(codec, "bad data");
      produced = n;
      break;
    }
    case Codec::kGzip: produced = gunzip(in, out); break;
    case Codec::kZstd: {
      const size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
      if (ZSTD_isError(n)) corrupt(codec, ZSTD_getErrorName(n));
      produced = n;
      break;
    }
    case Codec::kBrotli: {
      size_t n = out.size();
      if (BrotliDecoderDecompress(in.size(), reinterpret_cast<const uint8_t*>(in.data()), &n,
                                  reinterpret_cast<uint8_t*>(out.data())) != BROTLI_DECODER_RESULT_SUCCESS)
        corrupt(codec, "bad data");
      produced = n;
      break;
    }
    case Codec::kLz4Raw: {
      const int n = LZ4_decompress_safe(in.data(), out.data(), static_cast<int>(in.size()), static_cast<int>(out.size()));
      if (n < 0) corrupt(codec, "bad data");
      produced = static_cast<size_t>(n);
      break;
    }
    default:
      throw DataError(std::string("pages compressed with ") + codec_name(codec) + " are not supported",
                      "rewrite the file with snappy, zstd or gzip, e.g. `python -c \"import pyarrow.parquet as pq; "
                      "pq.write_table(pq.read_table('in.parquet'), 'out.parquet', compression='zstd')\"`");
  }
  if (produced != uncompressed_size)
    corrupt(codec, std::to_string(produced) + " bytes where the header says " + std::to_string(uncompressed_size));
  return out;
}

}  // namespace swift::parquet
