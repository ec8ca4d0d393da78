// Loading the rows of a training job and choosing how they are encoded (shared by sft/pt and export
// --to_cached_dataset, so a cache is exactly what training would have encoded).
#include "swift/recipes/train_rows.h"

#include "swift/model/family_registry.h"
#include "swift/template/select.h"
#include "swift/template/template_meta.h"

namespace swift::recipes {

EncodeSettings encode_settings(const cli::Flags& flags, int64_t max_position_embeddings) {
  EncodeSettings s;
  s.max_length = flags.integer("max_length") > 0 ? flags.integer("max_length") : max_position_embeddings;
  s.truncation = train::parse_truncation(flags.str("truncation_strategy"));
  s.num_proc = static_cast<int>(std::max<int64_t>(1, flags.integer("dataset_num_proc")));
  s.data_seed = static_cast<uint64_t>(flags.given("data_seed") ? flags.integer("data_seed") : flags.integer("seed"));
  return s;
}

TrainingTemplate training_template(const cli::Flags& flags, const tokenizer::Tokenizer& tokenizer,
                                   const std::filesystem::path& model_dir, const std::string& model_type) {
  templates::TemplateOptions options;
  if (flags.given("system")) options.system = flags.str("system");
  std::string loss_scale = flags.str("loss_scale");
  if (flags.command() == "rlhf") {  // pairs; scored on the last reply unless said otherwise (orpo: every reply)
    options.row_kind = flags.str("rlhf_type") == "kto" ? templates::TemplateOptions::RowKind::kLabelledReply
                                                       : templates::TemplateOptions::RowKind::kPreferencePair;
    if (loss_scale.empty()) loss_scale = flags.str("rlhf_type") == "orpo" ? "default" : "last_round";
  }
  options.loss_rule = templates::parse_loss_rule(loss_scale);
  TrainingTemplate t;
  if (!flags.boolean("use_chat_template")) {
    t.chat = std::make_unique<templates::Template>(templates::plain_text_template_meta(), tokenizer, options);
    return t;
  }
  const auto* family = model::find_model_family(model_type, {});
  const auto choice = templates::choose_template(flags.str("template"), {model_dir},
                                                 family ? family->default_template : "",
                                                 "the default for model_type " + model_type);
  t.name = choice.name;
  t.chat = std::make_unique<templates::Template>(templates::find_template_meta(choice.name), tokenizer, options);
  return t;
}

train::CacheInfo cache_identity(const cli::Flags& flags, const std::string& template_name,
                                const tokenizer::Tokenizer& tokenizer) {
  train::CacheInfo info;
  info.template_name = template_name;
  info.loss_scale = flags.str("loss_scale");
  if (flags.given("system")) info.system = flags.str("system");
  info.tokenizer_fingerprint = train::tokenizer_fingerprint(tokenizer);
  return info;
}

std::vector<cli::FlagSpec> dataset_flags(bool pretrain) {
  using cli::FlagType;
  return {
      {"dataset", FlagType::kList, "", "training data: .jsonl/.json/.csv files (path#N samples N rows) or built-ins "
                                       "(swift/self-cognition, swift/arithmetic)"},
      {"val_dataset", FlagType::kList, "", "validation data (same forms)"},
      {"split_dataset_ratio", FlagType::kFloat, "0", "hold out this fraction of --dataset for validation"},
      {"columns", FlagType::kString, "", "rename columns first, as JSON: '{\"src\": \"query\", \"tgt\": \"response\"}'"},
      {"model_name", FlagType::kList, "", "for swift/self-cognition: the model's name (Chinese, then English)"},
      {"model_author", FlagType::kList, "", "for swift/self-cognition: the author (Chinese, then English)"},
      {"template", FlagType::kString, "", "chat template (default: the checkpoint's args.json, else the family's)"},
      {"system", FlagType::kString, "", "system prompt replacing the template's default"},
      {"use_chat_template", FlagType::kBool, pretrain ? "false" : "true", "false: plain text, as pretraining"},
      {"loss_scale", FlagType::kString, pretrain ? "all" : "default", "which tokens carry loss: default, last_round, all"},
      {"max_length", FlagType::kInt, "0", "tokens per sample at most (0: the model's max_position_embeddings)"},
      {"truncation_strategy", FlagType::kString, "delete", "longer samples: delete, left or right"},
      {"dataset_num_proc", FlagType::kInt, "1", "threads that tokenise the dataset"},
      {"data_seed", FlagType::kInt, "", "seed for data order and sampling (default: --seed)"},
  };
}

data::DatasetOptions dataset_options(const cli::Flags& flags, uint64_t data_seed) {
  data::DatasetOptions options;
  options.builtin = {flags.list("model_name"), flags.list("model_author"), data_seed};
  options.columns = data::parse_columns(flags.str("columns"));
  return options;
}

TrainRows load_train_rows(const cli::Flags& flags, uint64_t data_seed) {
  const auto options = dataset_options(flags, data_seed);
  TrainRows rows;
  if (!flags.list("dataset").empty()) rows.train = data::load_datasets(flags.list("dataset"), data_seed, "--dataset", options);
  if (!flags.list("val_dataset").empty())
    rows.val = data::load_datasets(flags.list("val_dataset"), data_seed, "--val_dataset", options);
  auto held_out = split_off_validation(rows.train, flags.number("split_dataset_ratio"), data_seed);
  rows.val.insert(rows.val.end(), std::make_move_iterator(held_out.begin()), std::make_move_iterator(held_out.end()));
  return rows;
}

}  // namespace swift::recipes
