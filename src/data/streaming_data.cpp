// --streaming: a shuffle buffer over a row stream, encoding rows as they are drawn.
#include "swift/data/streaming_data.h"

#include <algorithm>

#include "swift/core/error.h"
#include "swift/core/logging.h"

namespace swift::data {

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
constexpr size_t kLoggedDrops = 10;
}  // namespace

StreamingData::StreamingData(std::unique_ptr<data::RowStream> stream, const templates::Template& chat,
                             StreamingOptions options)
    : stream_(std::move(stream)), chat_(chat), options_(std::move(options)) {
  options_.batch_size = std::max<int64_t>(1, options_.batch_size);
  options_.shuffle_buffer_size = std::max<int64_t>(1, options_.shuffle_buffer_size);
}

std::pair<nlohmann::json, data::StreamPosition> StreamingData::next_row() {
  for (int pass = 0; pass < 2; ++pass) {
    while (static_cast<int64_t>(buffer_.size()) < options_.shuffle_buffer_size) {
      auto row = stream_->next();
      if (!row) break;
      buffer_.push_back(std::move(*row));
    }
    if (!buffer_.empty()) break;
    // The end of the data: the next epoch reads it again in a new order.
    SWIFT_CHECK(pass == 0 && (kept_in_epoch_ > 0 || draws_ == 0), DataError,
                options_.what + ": a whole pass over the data left no row to train on (" + report_.summary() + ")",
                "raise --max_length, use --truncation_strategy left|right, or check the rows have assistant replies");
    ++epoch_;
    draws_ = kept_in_epoch_ = 0;
    stream_->rewind();
  }
  SWIFT_CHECK(!buffer_.empty(), DataError, options_.what + " has no rows", "check the files");
  const uint64_t r = splitmix64(options_.seed * 0x100000001b3ULL ^ splitmix64(static_cast<uint64_t>(epoch_) * 0x51ed27ULL + draws_));
  ++draws_;
  const size_t i = static_cast<size_t>(r % buffer_.size());
  auto out = std::move(buffer_[i]);
  buffer_[i] = std::move(buffer_.back());
  buffer_.pop_back();
  return out;
}

std::vector<const Example*> StreamingData::next_micro_batch() {
  current_.clear();
  while (static_cast<int64_t>(current_.size()) < options_.batch_size) {
    auto [row, at] = next_row();
    Example e;
    const RowFate fate = encode_row(row, chat_, options_.max_length, options_.truncation, e,
                                    options_.what + " row " + std::to_string(at.line) + " of spec " + std::to_string(at.spec + 1));
    count_fate(report_, fate);
    if (fate == RowFate::kKept || fate == RowFate::kTruncated) {
      ++kept_in_epoch_;
      current_.push_back(std::move(e));
      continue;
    }
    const size_t drops = report_.deleted_too_long + report_.deleted_no_loss;
    if (drops <= kLoggedDrops)
      log_warn("streaming: skipped ", options_.what, " row at line ", at.line, " of spec ", at.spec + 1,
               fate == RowFate::kTooLong ? ": longer than --max_length" : ": no token to learn",
               drops == kLoggedDrops ? " (further skips are only counted)" : "");
  }
  std::vector<const Example*> out;
  for (const auto& e : current_) out.push_back(&e);
  return out;
}

nlohmann::json StreamingData::state() const {
  nlohmann::json buffer = nlohmann::json::array();
  for (const auto& [row, at] : buffer_) buffer.push_back(at.to_json());
  return {{"kind", "streaming"}, {"epoch", epoch_},          {"draws", draws_},
          {"kept_in_epoch", kept_in_epoch_}, {"reader", stream_->position().to_json()}, {"buffer", buffer}};
}

void StreamingData::restore(const nlohmann::json& state) {
  SWIFT_CHECK(state.value("kind", "") == "streaming", DataError,
              "the checkpoint's data position is for " + state.value("kind", std::string("?")) + " data, not --streaming",
              "resume with the data flags of the run that wrote it, or pass --ignore_data_skip true");
  try {
    epoch_ = state.at("epoch").get<int64_t>();
    draws_ = state.at("draws").get<uint64_t>();
    kept_in_epoch_ = state.at("kept_in_epoch").get<uint64_t>();
    buffer_.clear();
    for (const auto& p : state.at("buffer")) {
      const auto at = data::StreamPosition::from_json(p);
      buffer_.emplace_back(stream_->read_at(at), at);
    }
    stream_->seek(data::StreamPosition::from_json(state.at("reader")));
  } catch (const nlohmann::json::exception& e) {
    throw DataError(std::string("the checkpoint's streaming state is malformed: ") + e.what(),
                    "resume from a checkpoint written by --streaming, or pass --ignore_data_skip true");
  }
}

std::string StreamingData::report() const {
  if (report_.deleted_too_long + report_.deleted_no_loss == 0) return {};
  return "streaming: " + report_.summary();
}

}  // namespace swift::data
