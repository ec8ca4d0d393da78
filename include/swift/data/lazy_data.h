// --lazy_tokenize: rows stay as normalised JSON and each is encoded when its micro-batch is drawn. The order is
// the in-memory order (same seed, same batches), so when no row is dropped the losses equal eager encoding's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "swift/data/train_data.h"

namespace swift::data {

class LazyData : public TrainData {
 public:
  // `chat` must outlive this object. `what` names the rows in messages ("--dataset").
  LazyData(std::vector<nlohmann::json> rows, const templates::Template& chat, int64_t max_length, Truncation truncation,
           int64_t batch_size, uint64_t seed, std::string what = "--dataset");
  // A row that turns out longer than max_length (--truncation_strategy delete) or without a token to learn is
  // replaced by another row, as ms-swift's LazyLLMDataset does: the next rows of a fixed seeded permutation,
  // at most 10 tries (then DataError). Each dropped row is logged once and counted in report().
  std::vector<const Example*> next_micro_batch() override;
  std::optional<int64_t> batches_per_epoch() const override { return sampler_.batches_per_epoch(); }
  int64_t epoch() const override { return sampler_.epoch(); }
  nlohmann::json state() const override;  // {"kind": "lazy", "epoch", "position"}
  void restore(const nlohmann::json& state) override;
  std::string report() const override;

 private:
  // The example for row i, or a replacement; encodes as needed.
  Example encode_or_replace(size_t i);
  std::vector<nlohmann::json> rows_;
  const templates::Template& chat_;
  int64_t max_length_;
  Truncation truncation_;
  std::string what_;
  BatchSampler sampler_;
  std::vector<size_t> fallback_;        // a seeded permutation of the rows: where replacements come from
  std::vector<size_t> fallback_index_;  // row -> its place in fallback_
  std::vector<uint8_t> dropped_;        // rows known to be dropped (1 too long, 2 no loss)
  size_t too_long_ = 0, no_loss_ = 0, replaced_ = 0;
  std::vector<Example> current_;
};

}  // namespace swift::data
