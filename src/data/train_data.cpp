// In-memory training data and the trainer_state.json side of data resume.
#include "swift/data/train_data.h"

#include "swift/core/error.h"

namespace swift::data {

InMemoryData::InMemoryData(std::vector<Example> examples, int64_t batch_size, uint64_t seed)
    : examples_(std::move(examples)), sampler_(examples_.size(), batch_size, seed) {}

std::vector<const Example*> InMemoryData::next_micro_batch() {
  std::vector<const Example*> out;
  for (size_t i : sampler_.next()) out.push_back(&examples_[i]);
  return out;
}

nlohmann::json InMemoryData::state() const {
  return {{"kind", "in_memory"}, {"epoch", sampler_.epoch()}, {"position", sampler_.position()}};
}

void InMemoryData::restore(const nlohmann::json& state) {
  SWIFT_CHECK(state.value("kind", "") == "in_memory", DataError,
              "the checkpoint's data position is for " + state.value("kind", std::string("?")) + " data, not in-memory data",
              "resume with the data flags of the run that wrote it (--streaming, --lazy_tokenize), or pass "
              "--ignore_data_skip true");
  const auto position = state.at("position").get<size_t>();
  SWIFT_CHECK(position <= examples_.size(), DataError,
              "the checkpoint's data position " + std::to_string(position) + " is past the " +
                  std::to_string(examples_.size()) + " training examples",
              "resume with the same --dataset, or pass --ignore_data_skip true");
  sampler_.set_position(state.at("epoch").get<int64_t>(), position);
}

nlohmann::json data_state_of(const nlohmann::json& trainer_state) {
  if (trainer_state.contains("data_state")) return trainer_state.at("data_state");
  return {{"kind", "in_memory"},
          {"epoch", trainer_state.at("epoch").get<int64_t>()},
          {"position", trainer_state.at("data_position").get<size_t>()}};
}

}  // namespace swift::data
