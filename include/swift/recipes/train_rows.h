// The dataset rows of a training job as sft, pt and `export --to_cached_dataset` read them: --dataset and
// --val_dataset (with --columns, --model_name/--model_author for built-ins) and the --split_dataset_ratio hold-out.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <filesystem>
#include <memory>
#include <string>

#include "swift/cli/flags.h"
#include "swift/core/error.h"
#include "swift/data/dataset.h"
#include "swift/template/template.h"
#include "swift/train/dataset_cache.h"
#include "swift/train/sft_data.h"

namespace swift::recipes {

// The flags that say which rows a job reads and how they are encoded: --dataset ... --data_seed. One table for
// sft/pt and `export --to_cached_dataset`, so a cache is made exactly as training would encode. pretrain: pt's
// defaults (plain text, loss on every token).
std::vector<cli::FlagSpec> dataset_flags(bool pretrain);

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

// How rows become examples, from the flags: --max_length (0: the model's max_position_embeddings),
// --truncation_strategy, --dataset_num_proc threads, --data_seed (default --seed).
struct EncodeSettings {
  int64_t max_length = 0;
  train::Truncation truncation = train::Truncation::kDelete;
  int num_proc = 1;
  uint64_t data_seed = 0;
};
EncodeSettings encode_settings(const cli::Flags& flags, int64_t max_position_embeddings);

// The chat template a job encodes with: --template (else the model folder's args.json, else the family's
// default for model_type) with --system and --loss_scale; plain text with --use_chat_template false (name "").
struct TrainingTemplate {
  std::string name;
  std::unique_ptr<templates::Template> chat;
};
TrainingTemplate training_template(const cli::Flags& flags, const tokenizer::Tokenizer& tokenizer,
                                   const std::filesystem::path& model_dir, const std::string& model_type);

// What identifies an encoding in a cached dataset: the template, --loss_scale, --system and the tokenizer. The
// export writes it, and training from a cache checks the cache against it.
train::CacheInfo cache_identity(const cli::Flags& flags, const std::string& template_name,
                                const tokenizer::Tokenizer& tokenizer);

struct TrainRows {
  std::vector<nlohmann::json> train, val;
};
// --dataset (when given) and --val_dataset rows, normalised, with --split_dataset_ratio applied to --dataset.
TrainRows load_train_rows(const cli::Flags& flags, uint64_t data_seed);

}  // namespace swift::recipes
