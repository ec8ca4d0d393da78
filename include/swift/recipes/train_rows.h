// The dataset rows of a training job as sft, pt and `export --to_cached_dataset` read them: --dataset and
// --val_dataset (with --columns, --model_name/--model_author for built-ins) and the --split_dataset_ratio hold-out.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/core/error.h"
#include "swift/data/dataset.h"

namespace swift::recipes {

// --columns, --model_name, --model_author as data::load_datasets takes them.
data::DatasetOptions dataset_options(const cli::Flags& flags, uint64_t data_seed);

// Moves a seeded --split_dataset_ratio share of `items` (shuffled by `seed`) to the returned vector; ratio 0
// leaves `items` untouched. UsageError/DataError for a ratio outside [0, 1) or one that leaves nothing to train.
template <typename T>
std::vector<T> split_off_validation(std::vector<T>& items, double ratio, uint64_t seed) {
  SWIFT_CHECK(ratio >= 0 && ratio < 1, UsageError, "--split_dataset_ratio must be in [0, 1)", "e.g. 0.05");
  if (ratio == 0 || items.empty()) return {};
  std::mt19937_64 rng(seed);
  std::shuffle(items.begin(), items.end(), rng);
  const size_t n_val = std::max<size_t>(1, static_cast<size_t>(std::llround(ratio * items.size())));
  SWIFT_CHECK(n_val < items.size(), DataError, "--split_dataset_ratio leaves no training rows", "lower it");
  std::vector<T> val(std::make_move_iterator(items.end() - static_cast<long>(n_val)), std::make_move_iterator(items.end()));
  items.resize(items.size() - n_val);
  return val;
}

struct TrainRows {
  std::vector<nlohmann::json> train, val;
};
// --dataset (when given) and --val_dataset rows, normalised, with --split_dataset_ratio applied to --dataset.
TrainRows load_train_rows(const cli::Flags& flags, uint64_t data_seed);

}  // namespace swift::recipes
