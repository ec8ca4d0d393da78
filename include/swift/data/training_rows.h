// The dataset rows of a training job as sft, pt, rlhf and `export --to_cached_dataset` read them (--dataset and
// --val_dataset, built-ins, the --split_dataset_ratio hold-out), and the chat template that encodes them, chosen
// and configured alike, so a cache is exactly what training would have encoded.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "swift/core/error.h"
#include "swift/data/data_options.h"
#include "swift/data/dataset_cache.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"

namespace swift::data {

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

// The chat template a job encodes with: --template (else the model folder's args.json, else `family_default`, the
// default of the model's family) with --system and --loss_scale; plain text with --use_chat_template false (name "").
struct TrainingTemplate {
  std::string name;
  std::unique_ptr<templates::Template> chat;
};
TrainingTemplate training_template(const DataOptions& options, const tokenizer::Tokenizer& tokenizer,
                                   const std::filesystem::path& model_dir, const std::string& family_default,
                                   const std::string& model_type);

// --loss_scale as the template applies it: with "+ignore_empty_think" added for hybrid thinking templates (qwen3)
// unless --disable_ignore_empty_think, as ms-swift. `template_name` "" is plain text.
templates::LossScale effective_loss_scale(const DataOptions& options, const std::string& template_name);
// Its name, as ms-swift records it in args.json ("default+ignore_empty_think").
std::string resolved_loss_scale(const DataOptions& options, const std::string& template_name);

// What identifies an encoding in a cached dataset: the template, --loss_scale, --system and the tokenizer. The
// export writes it, and training from a cache checks the cache against it.
CacheInfo cache_identity(const DataOptions& options, const std::string& template_name, const tokenizer::Tokenizer& tokenizer);

struct TrainRows {
  std::vector<nlohmann::json> train, val;
};
// --dataset (when given) and --val_dataset rows, normalised, with --split_dataset_ratio applied to --dataset.
TrainRows load_train_rows(const DataOptions& options);

}  // namespace swift::data
