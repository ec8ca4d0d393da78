// TensorBoard event files without TensorFlow or protobuf: scalar summaries as TFRecord-framed Event protos,
// encoded by hand, flushed after every write so a killed run keeps its curves.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swift::train {

// Writes <log_dir>/events.out.tfevents.<unix time>.<host>.<pid> (the name torch's SummaryWriter uses; the pid
// keeps the files of concurrent ranks apart). The first record is the Event{file_version: "brain.Event:2"}.
class TensorBoardWriter {
 public:
  // Creates log_dir if needed. Throws DataError naming the file when it cannot be opened.
  explicit TensorBoardWriter(const std::filesystem::path& log_dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One Event with a single simple_value summary. wall_time: seconds since the epoch; default now.
  void add_scalar(const std::string& tag, double value, int64_t step, std::optional<double> wall_time = {});
  // One Event carrying several (tag, value) pairs at the same step (e.g. loss, lr, grad_norm of one log line).
  void add_scalars(const std::vector<std::pair<std::string, double>>& values, int64_t step,
                   std::optional<double> wall_time = {});

  // Flushes and closes; further writes throw. Idempotent; the destructor calls it.
  void close();
  const std::filesystem::path& file() const { return file_; }

 private:
  void write_record(std::string_view data);

  std::filesystem::path file_;
  std::FILE* out_ = nullptr;
};

// Building blocks, public for the tests.
namespace tfrecord {
// CRC-32C (Castagnoli), as TFRecord uses. crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view data);
// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);
// One record: uint64 length (LE), masked crc of the length bytes, data, masked crc of data.
std::string frame(std::string_view data);
// tensorflow.Event protos (event.proto / summary.proto field numbers).
std::string encode_file_version_event(double wall_time, std::string_view version);
std::string encode_scalars_event(double wall_time, int64_t step,
                                 const std::vector<std::pair<std::string, double>>& values);
}  // namespace tfrecord

}  // namespace swift::train
