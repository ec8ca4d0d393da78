// Hand-encoded tensorflow.Event protos in TFRecord framing. Proto field numbers from tensorflow's
// core/util/event.proto (Event: wall_time=1 double, step=2 int64, file_version=3 string, summary=5) and
// core/framework/summary.proto (Summary: value=1 repeated; Summary.Value: tag=1 string, simple_value=2 float).
#include "swift/train/tensorboard_writer.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "swift/core/error.h"

namespace fs = std::filesystem;

namespace swift::train {

namespace tfrecord {

namespace {

std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli poly
    table[i] = c;
  }
  return table;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_fixed_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
void put_key(std::string& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

void put_bytes_field(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

void put_double_field(std::string& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, 1);
  put_fixed_le(out, bits, 8);
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_crc32c_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string frame(std::string_view data) {
  std::string length;
  put_fixed_le(length, data.size(), 8);
  std::string out = length;
  put_fixed_le(out, masked_crc32c(length), 4);
  out.append(data.data(), data.size());
  put_fixed_le(out, masked_crc32c(data), 4);
  return out;
}

std::string encode_file_version_event(double wall_time, std::string_view version) {
  std::string event;
  put_double_field(event, 1, wall_time);
  put_bytes_field(event, 3, version);
  return event;
}

std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<std::pair<std::string, double>>& values) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    std::string v;
    put_bytes_field(v, 1, tag);
    // simple_value is a proto float: TensorBoard stores scalars in single precision.
    const float f = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    put_key(v, 2, 5);
    put_fixed_le(v, bits, 4);
    put_bytes_field(summary, 1, v);
  }
  std::string event;
  put_double_field(event, 1, wall_time);
  put_key(event, 2, 0);
  put_varint(event, static_cast<uint64_t>(step));  // int64: negative steps become 10-byte varints, as in proto
  put_bytes_field(event, 5, summary);
  return event;
}

}  // namespace tfrecord

namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const fs::path& log_dir) {
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  SWIFT_CHECK(!ec, DataError, "cannot create TensorBoard folder " + log_dir.string() + ": " + ec.message(),
              "check --logging_dir / --output_dir is writable");
  const double wall_time = now_seconds();
  file_ = log_dir / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time)) + "." + host_name() +
                     "." + std::to_string(::getpid()));
  out_ = std::fopen(file_.c_str(), "ab");
  SWIFT_CHECK(out_ != nullptr, DataError, "cannot open " + file_.string() + ": " + std::strerror(errno),
              "check --logging_dir / --output_dir is writable");
  write_record(tfrecord::encode_file_version_event(wall_time, "brain.Event:2"));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (out_ != nullptr) std::fclose(out_);  // no throwing from a destructor; close() reports errors
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step,
                                   std::optional<double> wall_time) {
  add_scalars({{tag, value}}, step, wall_time);
}

void TensorBoardWriter::add_scalars(const std::vector<std::pair<std::string, double>>& values, int64_t step,
                                    std::optional<double> wall_time) {
  write_record(tfrecord::encode_scalars_event(wall_time.value_or(now_seconds()), step, values));
}

void TensorBoardWriter::write_record(std::string_view data) {
  SWIFT_ASSERT(out_ != nullptr, "TensorBoardWriter used after close()");
  const std::string record = tfrecord::frame(data);
  // Flushed to the kernel after every record: a killed (not powered-off) run keeps every curve point.
  const bool ok = std::fwrite(record.data(), 1, record.size(), out_) == record.size() && std::fflush(out_) == 0;
  SWIFT_CHECK(ok, DataError, "writing " + file_.string() + ": " + std::strerror(errno), "is the disk full?");
}

void TensorBoardWriter::close() {
  if (out_ == nullptr) return;
  const bool ok = std::fclose(out_) == 0;
  out_ = nullptr;
  SWIFT_CHECK(ok, DataError, "closing " + file_.string() + ": " + std::strerror(errno), "is the disk full?");
}

}  // namespace swift::train
