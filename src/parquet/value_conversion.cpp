// Physical values to JSON (see value_conversion.h).
#include "value_conversion.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "swift/core/error.h"
#include "swift/tokenizer/unicode.h"

namespace swift::parquet {
namespace {

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// A big-endian two's-complement integer of any width, as a double (DECIMAL's unscaled value).
double big_endian_signed(std::string_view b) {
  if (b.empty()) return 0;
  const bool negative = static_cast<uint8_t>(b[0]) & 0x80;
  double v = 0;
  for (const char c : b) v = v * 256 + static_cast<uint8_t>(negative ? ~c : c);
  return negative ? -(v + 1) : v;
}

double half_to_double(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
}

}  // namespace

ValueConverter::ValueConverter(const SchemaElement& leaf) {
  const int ct = leaf.converted_type.value_or(-1);
  is_text_ = leaf.logical == kLogicalString || leaf.logical == kLogicalEnum || leaf.logical == kLogicalJson ||
             ct == kUtf8 || ct == kEnum || ct == kJson;
  is_decimal_ = leaf.logical == kLogicalDecimal || ct == kDecimal;
  // UINT_8 .. UINT_64 are converted types 11 .. 14.
  is_unsigned_ = (leaf.logical == kLogicalInteger && !leaf.integer_signed) || (ct >= 11 && ct <= 14);
  is_uuid_ = leaf.logical == kLogicalUuid && leaf.type_length == 16;
  is_float16_ = leaf.logical == kLogicalFloat16 && leaf.type_length == 2;
  scale_ = leaf.scale;
}

nlohmann::json ValueConverter::from_bool(bool v) const { return v; }

nlohmann::json ValueConverter::from_int32(int32_t v) const {
  if (is_decimal_) return v / std::pow(10.0, scale_);
  if (is_unsigned_) return static_cast<uint32_t>(v);
  return v;
}

nlohmann::json ValueConverter::from_int64(int64_t v) const {
  if (is_decimal_) return static_cast<double>(v) / std::pow(10.0, scale_);
  if (is_unsigned_) return static_cast<uint64_t>(v);
  return v;
}

nlohmann::json ValueConverter::from_int96(std::string_view b) const {
  int64_t nanos_of_day = 0;
  int32_t julian_day = 0;
  std::memcpy(&nanos_of_day, b.data(), 8);
  std::memcpy(&julian_day, b.data() + 8, 4);
  constexpr int64_t kUnixEpochJulianDay = 2440588, kNanosPerDay = 86400LL * 1000000000LL;
  return (static_cast<int64_t>(julian_day) - kUnixEpochJulianDay) * kNanosPerDay + nanos_of_day;
}

nlohmann::json ValueConverter::from_float(float v) const { return v; }
nlohmann::json ValueConverter::from_double(double v) const { return v; }

nlohmann::json ValueConverter::from_bytes(std::string_view v) const {
  if (is_decimal_) return big_endian_signed(v) / std::pow(10.0, scale_);
  if (is_float16_ && v.size() == 2) return half_to_double(static_cast<uint16_t>(static_cast<uint8_t>(v[0]) | static_cast<uint8_t>(v[1]) << 8));
  if (is_uuid_ && v.size() == 16) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
      out += kHex[static_cast<uint8_t>(v[i]) >> 4];
      out += kHex[static_cast<uint8_t>(v[i]) & 15];
    }
    return out;
  }
  const bool utf8 = tokenizer::is_valid_utf8(v);
  SWIFT_CHECK(utf8 || !is_text_, DataError, "a text value is not valid UTF-8",
              "the file is damaged or was written with another encoding; re-encode its text as UTF-8");
  return utf8 ? std::string(v) : base64(v);
}

}  // namespace swift::parquet
