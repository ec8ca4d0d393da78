// --streaming: rows come from a data::RowStream through a seeded shuffle buffer (--shuffle_buffer_size, as
// ms-swift/datasets) and are encoded as their micro-batch is drawn. There is no epoch length (the run needs
// --max_steps); at the end of the data the stream starts over with the next epoch's shuffle.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "swift/data/row_stream.h"
#include "swift/data/train_data.h"

namespace swift::data {

struct StreamingOptions {
  int64_t max_length = 0;  // 0: no limit
  Truncation truncation = Truncation::kDelete;
  int64_t batch_size = 1;
  uint64_t seed = 0;
  // Rows held for shuffling: each draw takes a uniformly chosen one (a function of seed, epoch and draw number)
  // and the buffer refills from the stream. 1 (or 0) keeps file order. Default: 1000, as ms-swift.
  int64_t shuffle_buffer_size = 1000;
  std::string what = "--dataset";
};

class StreamingData : public TrainData {
 public:
  // `chat` must outlive this object.
  StreamingData(std::unique_ptr<data::RowStream> stream, const templates::Template& chat, StreamingOptions options);
  // Rows longer than max_length (delete) or without a token to learn are skipped, as ms-swift's streaming
  // encoder does, logged (the first few) and counted in report(). DataError when a whole pass keeps nothing.
  std::vector<const Example*> next_micro_batch() override;
  std::optional<int64_t> batches_per_epoch() const override { return std::nullopt; }
  int64_t epoch() const override { return epoch_; }
  // {"kind": "streaming", "epoch", "draws", "kept_in_epoch", "reader": position, "buffer": [positions]}: the
  // buffered rows are saved by position and re-read on restore, so the state stays small.
  nlohmann::json state() const override;
  void restore(const nlohmann::json& state) override;
  std::string report() const override;

 private:
  std::pair<nlohmann::json, data::StreamPosition> next_row();
  std::unique_ptr<data::RowStream> stream_;
  const templates::Template& chat_;
  StreamingOptions options_;
  std::vector<std::pair<nlohmann::json, data::StreamPosition>> buffer_;
  int64_t epoch_ = 0;
  uint64_t draws_ = 0, kept_in_epoch_ = 0;
  EncodeReport report_;
  std::vector<Example> current_;
};

}  // namespace swift::data
