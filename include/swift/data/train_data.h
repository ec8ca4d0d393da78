// Where training examples come from, behind one interface the loop draws micro-batches from: in memory (encoded
// up front, or read from a --cached_dataset), lazily encoded (--lazy_tokenize) or streamed (--streaming).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "swift/data/example.h"
#include "swift/data/batch_sampler.h"

namespace swift::data {

class TrainData {
 public:
  virtual ~TrainData() = default;
  // The next micro-batch (at most the batch size; never empty). The pointers stay valid until the next call.
  virtual std::vector<const Example*> next_micro_batch() = 0;
  // Micro-batches in one pass over the data; nullopt when unknown (streaming).
  virtual std::optional<int64_t> batches_per_epoch() const = 0;
  virtual int64_t epoch() const = 0;
  // Everything resume needs to continue with the same micro-batches (trainer_state.json "data_state").
  virtual nlohmann::json state() const = 0;
  // Continues from a state() of the same kind of data. DataError when it does not fit.
  virtual void restore(const nlohmann::json& state) = 0;
  // One line on rows dropped while training (lazy and streaming encode on the way); empty when none.
  virtual std::string report() const { return {}; }
};

// Encoded examples in memory, served in seeded shuffled epochs (BatchSampler). The state is
// {"kind": "in_memory", "epoch", "position"}.
class InMemoryData : public TrainData {
 public:
  InMemoryData(std::vector<Example> examples, int64_t batch_size, uint64_t seed);
  std::vector<const Example*> next_micro_batch() override;
  std::optional<int64_t> batches_per_epoch() const override { return sampler_.batches_per_epoch(); }
  int64_t epoch() const override { return sampler_.epoch(); }
  nlohmann::json state() const override;
  void restore(const nlohmann::json& state) override;
  size_t size() const { return examples_.size(); }
  const Example& example(size_t i) const { return examples_.at(i); }

 private:
  std::vector<Example> examples_;
  BatchSampler sampler_;
};

// The data state of a trainer_state.json: its "data_state", or, for checkpoints written before it existed, the
// in-memory position from its "epoch" and "data_position".
nlohmann::json data_state_of(const nlohmann::json& trainer_state);

}  // namespace swift::data
