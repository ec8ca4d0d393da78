// Thrift compact protocol reader (see thrift_compact.h).
#include "thrift_compact.h"

#include <cstring>

#include "swift/core/error.h"

namespace swift::parquet {
namespace {

// Deeper nesting than Parquet's own metadata ever uses (about 6) is a malformed or hostile file.
constexpr int kMaxDepth = 32;

int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Inside a list or map a bool is one byte, not a type code.
uint8_t element_wire_type(uint8_t t) {
  return t == CompactReader::kTrue || t == CompactReader::kFalse ? uint8_t{CompactReader::kByte} : t;
}

}  // namespace

void CompactReader::fail(const std::string& what) const {
  throw DataError(std::string("malformed ") + what_ + " at byte " + std::to_string(file_offset_ + pos_) + ": " + what,
                  "the file is damaged or not Parquet; read it with pyarrow to check, or convert it to .jsonl");
}

void CompactReader::enter() {
  if (++depth_ > kMaxDepth) fail("structures nested more than " + std::to_string(kMaxDepth) + " deep");
}

uint8_t CompactReader::read_byte() {
  if (pos_ >= bytes_.size()) fail("cut short");
  return static_cast<uint8_t>(bytes_[pos_++]);
}

uint64_t CompactReader::read_varint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = read_byte();
    value |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return value;
  }
  fail("a varint longer than 10 bytes");
}

bool CompactReader::next_field(int16_t& last_id, Field& out) {
  const uint8_t header = read_byte();
  out.type = header & 0x0F;
  if (out.type == kStop) return false;
  const int delta = header >> 4;
  const int64_t id = delta != 0 ? last_id + delta : unzigzag(read_varint());
  if (id < INT16_MIN || id > INT16_MAX) fail("field id " + std::to_string(id) + " out of range");
  out.id = static_cast<int16_t>(id);
  last_id = out.id;
  return true;
}

int64_t CompactReader::read_int(uint8_t type) {
  switch (type) {
    case kByte: return static_cast<int8_t>(read_byte());
    case kI16:
    case kI32:
    case kI64: return unzigzag(read_varint());
    default: fail("an integer field has wire type " + std::to_string(type));
  }
}

int32_t CompactReader::read_i32(uint8_t type) {
  const int64_t v = read_int(type);
  if (v < INT32_MIN || v > INT32_MAX) fail("value " + std::to_string(v) + " does not fit 32 bits");
  return static_cast<int32_t>(v);
}

bool CompactReader::read_bool(uint8_t type) {
  if (type == kTrue) return true;
  if (type == kFalse) return false;
  if (type == kByte) return read_byte() == kTrue;  // inside a list
  fail("a bool field has wire type " + std::to_string(type));
}

std::string CompactReader::read_binary() {
  const uint64_t n = read_varint();
  if (n > bytes_.size() - pos_) fail("a string of " + std::to_string(n) + " bytes runs past the end");
  std::string out(bytes_.substr(pos_, n));
  pos_ += n;
  return out;
}

CompactReader::ListHeader CompactReader::read_list_header() {
  const uint8_t header = read_byte();
  ListHeader h;
  h.element_type = header & 0x0F;
  h.size = header >> 4;
  if (h.size == 15) h.size = read_varint();
  // Every element takes at least one byte: a longer list is a lie (and must not size an allocation).
  if (h.size > bytes_.size() - pos_) fail("a list of " + std::to_string(h.size) + " elements runs past the end");
  return h;
}

void CompactReader::skip(uint8_t type) {
  switch (type) {
    case kTrue:
    case kFalse: return;
    case kByte: read_byte(); return;
    case kI16:
    case kI32:
    case kI64: read_varint(); return;
    case kDouble:
      if (bytes_.size() - pos_ < 8) fail("cut short");
      pos_ += 8;
      return;
    case kBinary: read_binary(); return;
    case kList:
    case kSet: {
      enter();
      const ListHeader h = read_list_header();
      for (size_t i = 0; i < h.size; ++i) skip(element_wire_type(h.element_type));
      --depth_;
      return;
    }
    case kMap: {
      enter();
      const uint64_t n = read_varint();
      if (n > bytes_.size() - pos_) fail("a map of " + std::to_string(n) + " entries runs past the end");
      if (n > 0) {
        const uint8_t kinds = read_byte();
        for (uint64_t i = 0; i < n; ++i) {
          skip(element_wire_type(kinds >> 4));
          skip(element_wire_type(kinds & 0x0F));
        }
      }
      --depth_;
      return;
    }
    case kStruct: read_struct([&](const Field& f) { skip(f.type); }); return;
    default: fail("unknown wire type " + std::to_string(type));
  }
}

}  // namespace swift::parquet
