// TensorBoard events: the framing and CRC by hand, then the file read back by TensorBoard's own
// EventAccumulator (read_tensorboard.py).
#include "swift/train/tensorboard_writer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

#include "python_ref.h"

namespace swift::train {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TfRecord, Crc32cKnownAnswers) {
  EXPECT_EQ(tfrecord::crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(tfrecord::crc32c(""), 0u);
  EXPECT_EQ(tfrecord::crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(TfRecord, FrameLayout) {
  const std::string data = "hello";
  const std::string rec = tfrecord::frame(data);
  ASSERT_EQ(rec.size(), 8u + 4u + data.size() + 4u);
  uint64_t len = 0;
  std::memcpy(&len, rec.data(), 8);  // little-endian host
  EXPECT_EQ(len, data.size());
  uint32_t len_crc = 0, data_crc = 0;
  std::memcpy(&len_crc, rec.data() + 8, 4);
  std::memcpy(&data_crc, rec.data() + 12 + data.size(), 4);
  EXPECT_EQ(len_crc, tfrecord::masked_crc32c(rec.substr(0, 8)));
  EXPECT_EQ(data_crc, tfrecord::masked_crc32c(data));
  EXPECT_EQ(rec.substr(12, data.size()), data);
}

TEST(TensorBoardWriter, FileNameAndFirstEvent) {
  test::TrainTempDir dir;
  TensorBoardWriter w(dir.path() / "runs");
  EXPECT_EQ(w.file().parent_path(), dir.path() / "runs");
  EXPECT_EQ(w.file().filename().string().rfind("events.out.tfevents.", 0), 0u) << w.file();
  // Flushed at construction: the file_version record is on disk before any scalar.
  const std::string bytes = read_all(w.file());
  ASSERT_GT(bytes.size(), 16u);
  EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
}

TEST(TensorBoardWriter, EachWriteIsOnDiskImmediately) {
  test::TrainTempDir dir;
  TensorBoardWriter w(dir.path());
  const auto before = std::filesystem::file_size(w.file());
  w.add_scalar("train/loss", 1.5, 1);
  const auto after = std::filesystem::file_size(w.file());
  EXPECT_GT(after, before);  // no close() needed: a killed run keeps what it logged
}

// Reference: tensorboard.backend.event_processing.event_accumulator.EventAccumulator. Values are proto floats,
// so they compare to float(value) exactly; wall_time is a double and compares exactly.
TEST(TensorBoardWriterParity, ReadBackByTensorBoard) {
  test::TrainTempDir dir;
  std::filesystem::path file;
  {
    TensorBoardWriter w(dir.path() / "runs");
    file = w.file();
    for (int step = 1; step <= 20; ++step) {
      w.add_scalar("train/loss", 2.0 / step + 0.125, step, 1700000000.25 + step);
      w.add_scalars({{"train/learning_rate", 1e-4 * step}, {"train/grad_norm", 0.5 + step}}, step,
                    1700000000.5 + step);
      if (step % 5 == 0) w.add_scalar("eval/loss", 3.0 / step, step, 1700000000.75 + step);
    }
    w.add_scalar("train/big_step", -1.0, int64_t{1} << 40, 1700000100.0);
    // Not closed before reading: the reader must see everything already.
    const auto json_out = dir.path() / "tb.json";
    const auto r = test::run_train_script("read_tensorboard.py", "'" + file.string() + "' '" + json_out.string() + "'",
                                          dir.path());
    SWIFT_RUN_REFERENCE_OR_SKIP(r);
    nlohmann::json got;
    std::ifstream(json_out) >> got;
    EXPECT_EQ(got["file_version"].get<double>(), 2.0);  // the accumulator parses "brain.Event:2" to 2.0
    const auto& s = got["scalars"];
    for (const char* tag : {"train/loss", "train/learning_rate", "train/grad_norm", "eval/loss", "train/big_step"})
      ASSERT_TRUE(s.contains(tag)) << tag << " missing from " << s.dump();
    ASSERT_EQ(s["train/loss"].size(), 20u);
    ASSERT_EQ(s["train/grad_norm"].size(), 20u);
    ASSERT_EQ(s["eval/loss"].size(), 4u);
    for (int i = 0; i < 20; ++i) {
      const int step = i + 1;
      const auto& loss = s["train/loss"][i];
      EXPECT_EQ(loss[0].get<int64_t>(), step);
      EXPECT_EQ(loss[1].get<double>(), static_cast<double>(static_cast<float>(2.0 / step + 0.125)));
      EXPECT_EQ(loss[2].get<double>(), 1700000000.25 + step);
      EXPECT_EQ(s["train/learning_rate"][i][1].get<double>(), static_cast<double>(static_cast<float>(1e-4 * step)));
      EXPECT_EQ(s["train/grad_norm"][i][1].get<double>(), 0.5 + step);
    }
    EXPECT_EQ(s["eval/loss"][3][0].get<int64_t>(), 20);
    EXPECT_EQ(s["train/big_step"][0][0].get<int64_t>(), int64_t{1} << 40);
    EXPECT_EQ(s["train/big_step"][0][1].get<double>(), -1.0);
  }
}

}  // namespace
}  // namespace swift::train
