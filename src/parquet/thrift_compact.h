// Thrift's compact protocol, read-only: the encoding of Parquet's footer (FileMetaData) and page headers.
// Spec: https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md. Bounds-checked: a
// cut-short or malformed input throws DataError, never reads past the buffer or allocates from a bad length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace swift::parquet {

class CompactReader {
 public:
  // Wire types of the compact protocol (a field header's low nibble, a list header's element type).
  enum Type : uint8_t {
    kStop = 0, kTrue = 1, kFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6, kDouble = 7,
    kBinary = 8, kList = 9, kSet = 10, kMap = 11, kStruct = 12,
  };
  struct Field {
    int16_t id = 0;
    uint8_t type = kStop;
  };
  struct ListHeader {
    uint8_t element_type = kStop;
    size_t size = 0;
  };

  // `what` and `file_offset` (where `bytes` start in the file) name the place in messages.
  explicit CompactReader(std::string_view bytes, const char* what = "Parquet metadata", size_t file_offset = 0)
      : bytes_(bytes), what_(what), file_offset_(file_offset) {}
  // The reader only views its bytes: a temporary string would be freed before the first read.
  CompactReader(std::string&&, const char* = nullptr, size_t = 0) = delete;

  // Reads one struct, calling on_field(field) for each of its fields; on_field must consume the value (a read_*
  // call or skip(field.type)).
  template <typename OnField>
  void read_struct(OnField&& on_field) {
    enter();
    int16_t last_id = 0;
    for (Field f; next_field(last_id, f);) on_field(f);
    --depth_;
  }

  int64_t read_int(uint8_t type);       // a byte, i16, i32 or i64 (zigzag varint)
  int32_t read_i32(uint8_t type);       // as read_int, checked to fit 32 bits
  bool read_bool(uint8_t type);         // a field's bool is in its type; a list's takes one byte
  std::string read_binary();            // binary or string
  ListHeader read_list_header();        // list or set; size checked against the bytes left
  void skip(uint8_t type);              // any value, nested ones included (depth-limited)

  size_t position() const { return pos_; }

 private:
  bool next_field(int16_t& last_id, Field& out);
  uint8_t read_byte();
  uint64_t read_varint();
  void enter();
  [[noreturn]] void fail(const std::string& what) const;

  std::string_view bytes_;
  const char* what_;
  size_t file_offset_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace swift::parquet
