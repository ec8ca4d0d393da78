// swift export --to_cached_dataset true: tokenise --dataset (and the validation rows) once, exactly as sft
// would (same rows, split and encode_rows), and write them as a cached dataset that `swift sft
// --cached_dataset DIR` trains from without tokenising again. Layout as ms-swift's: DIR/train and DIR/val.
#include <filesystem>

#include "swift/cli/problems.h"
#include "swift/core/atomic_write.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/family_registry.h"
#include "swift/model/model_config.h"
#include "swift/recipes/commands.h"
#include "swift/data/data_options.h"
#include "swift/data/training_rows.h"
#include "swift/template/select.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/data/dataset_cache.h"
#include "swift/hub/hub_flags.h"
#include "swift/hub/hub_resolver.h"

namespace fs = std::filesystem;

namespace swift::recipes {

int export_cached_dataset(const cli::Flags& flags) {
  fs::path model_dir = flags.str("model");
  cli::Problems problems;
  const data::DataOptions options = data::data_options(flags, static_cast<uint64_t>(flags.integer("seed")), problems);
  problems.check(!model_dir.empty(), "swift export --to_cached_dataset true needs --model (its tokenizer encodes)",
                 "e.g. --model Qwen2.5-7B-Instruct --dataset data.jsonl --output_dir data-cached");
  problems.check(!options.datasets.empty() || !options.val_datasets.empty(),
                 "swift export --to_cached_dataset true needs --dataset", "e.g. --dataset data.jsonl");
  problems.raise();
  fs::path output = flags.str("output_dir");
  if (output.empty()) output = model_dir.lexically_normal().string() + "-cached_dataset";
  model_dir = hub::resolve_model(model_dir.string(), hub::hub_options(flags));  // org/name: the hub snapshot
  SWIFT_CHECK(flags.boolean("exist_ok") || !fs::exists(output), UsageError, "--output_dir " + output.string() + " already exists",
              "choose another --output_dir or pass --exist_ok true to replace it");

  // The tokenizer and template, chosen as swift sft chooses them.
  const auto config = model::load_model_config(model_dir);
  const auto tok = with_context("loading the tokenizer of " + model_dir.string(), [&] { return tokenizer::Tokenizer::load(model_dir); });
  const auto* family = model::find_model_family(config.model_type, {});
  const auto has_token = [&](const std::string& t) { return tok->token_to_id(t).has_value(); };
  const auto chat = data::training_template(options, *tok, model_dir, family ? family->template_for(has_token) : "",
                                            config.model_type);
  const int64_t max_length = options.max_length_for(config.max_position_embeddings);

  const data::TrainRows rows = data::load_train_rows(options);
  data::CacheInfo info = data::cache_identity(options, chat.name, *tok);
  info.model = fs::absolute(model_dir).lexically_normal().string();
  info.max_length = max_length;
  info.truncation_strategy = options.truncation_strategy;

  AtomicDir out(output);  // a crash never leaves a half-written cache
  auto write_split = [&](const std::vector<nlohmann::json>& split_rows, const std::string& split, const std::string& what,
                         std::vector<std::string> specs) {
    data::EncodeReport report;
    const auto examples = data::encode_rows(split_rows, *chat.chat, max_length, options.truncation, report, what, options.num_proc);
    data::CacheInfo split_info = info;
    split_info.split = split;
    split_info.datasets = std::move(specs);
    split_info.encode_report = report.summary();
    data::write_dataset_cache(out.path() / split, examples, split_info);
    log_info(split, " split: ", report.summary());
  };
  if (!rows.train.empty()) write_split(rows.train, "train", "--dataset", options.datasets);
  if (!rows.val.empty()) {
    auto specs = options.val_datasets;
    if (options.split_dataset_ratio > 0) specs.push_back("--split_dataset_ratio " + flags.str("split_dataset_ratio"));
    write_split(rows.val, "val", "--val_dataset", specs);
  }
  out.commit();
  log_info("cached dataset written to ", output.string(), ": train with swift sft --cached_dataset ",
           (output / "train").string(), rows.val.empty() ? "" : " --cached_val_dataset " + (output / "val").string());
  return 0;
}

}  // namespace swift::recipes
