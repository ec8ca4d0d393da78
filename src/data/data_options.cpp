// The data flags into DataOptions (see data_options.h).
#include "swift/data/data_options.h"

#include "swift/hub/hub_flags.h"

namespace swift::data {

DatasetOptions DataOptions::reading() const {
  DatasetOptions options;
  options.builtin = {model_name, model_author, data_seed};
  options.columns = columns;
  options.hub = hub;
  return options;
}

std::vector<cli::FlagSpec> dataset_flags(bool pretrain, const std::string& loss_scale_default,
                                         const std::string& loss_scale_help) {
  using cli::FlagType;
  return {
      {"dataset", FlagType::kList, "", "training data: .jsonl/.json/.csv files (path#N samples N rows), hub dataset ids "
                                       "(org/name, hf::org/name:subset#N; docs/hub.md) or built-ins "
                                       "(swift/self-cognition, swift/arithmetic)"},
      {"val_dataset", FlagType::kList, "", "validation data (same forms)"},
      {"split_dataset_ratio", FlagType::kFloat, "0", "hold out this fraction of --dataset for validation"},
      {"columns", FlagType::kString, "", "rename columns first, as JSON: '{\"src\": \"query\", \"tgt\": \"response\"}'"},
      {"model_name", FlagType::kList, "", "for swift/self-cognition: the model's name (Chinese, then English)"},
      {"model_author", FlagType::kList, "", "for swift/self-cognition: the author (Chinese, then English)"},
      {"template", FlagType::kString, "", "chat template (default: the checkpoint's args.json, else the family's)"},
      {"system", FlagType::kString, "", "system prompt replacing the template's default"},
      {"agent_template", FlagType::kString, "",
       "how a `tools` column, tool calls and tool results are written: hermes, llama3, react_en, glm4 (default: "
       "the template's own: hermes for qwen*, llama3 for llama3*, glm4 for glm4)"},
      {"use_chat_template", FlagType::kBool, pretrain ? "false" : "true", "false: plain text, as pretraining"},
      {"loss_scale", FlagType::kString, loss_scale_help.empty() ? (pretrain ? "all" : "default") : loss_scale_default,
       loss_scale_help.empty() ? "which tokens carry loss: default, last_round, all (each optionally +ignore_empty_think)"
                               : loss_scale_help},
      {"add_non_thinking_prefix", FlagType::kBool, "true",
       "qwen3: open every training reply that does not think with the empty <think></think> block, as the model answers"},
      {"disable_ignore_empty_think", FlagType::kBool, "false",
       "qwen3: put loss on that empty think block too (by default it carries none, as ms-swift's +ignore_empty_think)"},
      {"max_length", FlagType::kInt, "0", "tokens per sample at most (0: the model's max_position_embeddings)"},
      {"truncation_strategy", FlagType::kString, "delete", "longer samples: delete, left or right"},
      {"dataset_num_proc", FlagType::kInt, "1", "threads that tokenise the dataset"},
      {"data_seed", FlagType::kInt, "", "seed for data order and sampling (default: --seed)"},
  };
}

std::vector<cli::FlagSpec> training_data_flags() {
  using cli::FlagType;
  return {
      {"packing", FlagType::kBool, "false", "pack samples into rows of --packing_length tokens (no cross-sample attention)"},
      {"packing_length", FlagType::kInt, "0", "tokens per packed row (0: --max_length)", {"pack_max_length"}},
      {"padding_free", FlagType::kBool, "false", "each micro-batch's samples concatenated into one row without padding (no cross-sample attention; the same losses as padded rows)"},
      {"lazy_tokenize", FlagType::kBool, "false", "encode each row when its batch is drawn instead of all up front"},
      {"streaming", FlagType::kBool, "false", "read --dataset row by row while training (.jsonl line by line; needs --max_steps)"},
      {"shuffle_buffer_size", FlagType::kInt, "1000", "--streaming: rows held for shuffling (1: file order)"},
      {"cached_dataset", FlagType::kList, "", "tokenised training data from swift export --to_cached_dataset true (DIR or DIR/train)"},
      {"cached_val_dataset", FlagType::kList, "", "tokenised validation data from such an export (DIR or DIR/val)"},
  };
}

DataOptions data_options(const cli::Flags& flags, uint64_t seed, cli::Problems& problems) {
  DataOptions o;
  o.datasets = flags.list("dataset");
  o.val_datasets = flags.list("val_dataset");
  o.split_dataset_ratio = flags.number("split_dataset_ratio");
  problems.check(o.split_dataset_ratio >= 0 && o.split_dataset_ratio < 1, "--split_dataset_ratio must be in [0, 1)", "e.g. 0.05");
  o.columns = problems.collect([&] { return parse_columns(flags.str("columns")); }, std::map<std::string, std::string>{});
  o.model_name = flags.list("model_name");
  o.model_author = flags.list("model_author");
  o.template_name = flags.str("template");
  if (flags.given("system")) o.system = flags.str("system");
  o.agent_template = flags.str("agent_template");
  o.use_chat_template = flags.boolean("use_chat_template");
  o.loss_scale = flags.str("loss_scale");
  if (!o.loss_scale.empty()) problems.collect([&] { return templates::parse_loss_scale(o.loss_scale); }, templates::LossScale{});
  o.add_non_thinking_prefix = flags.boolean("add_non_thinking_prefix");
  o.disable_ignore_empty_think = flags.boolean("disable_ignore_empty_think");
  o.max_length = flags.integer("max_length");
  problems.at_least("max_length", o.max_length, 0, "tokens per sample; 0 takes the model's max_position_embeddings");
  o.truncation_strategy = flags.str("truncation_strategy");
  o.truncation = problems.collect([&] { return parse_truncation(o.truncation_strategy); }, Truncation::kDelete);
  problems.at_least("dataset_num_proc", flags.integer("dataset_num_proc"), 1, "threads that encode the rows, e.g. 4");
  o.num_proc = static_cast<int>(std::max<int64_t>(1, flags.integer("dataset_num_proc")));
  o.data_seed = static_cast<uint64_t>(flags.given("data_seed") ? flags.integer("data_seed") : static_cast<int64_t>(seed));
  o.hub = hub::hub_options(flags);
  o.hub.revision.clear();  // --revision is the model's; a dataset id is read at the hub's default branch
  if (!flags.declared("packing")) return o;

  o.packing = flags.boolean("packing");
  o.packing_length = flags.integer("packing_length");
  o.padding_free = flags.boolean("padding_free");
  problems.at_least("packing_length", o.packing_length, 0, "tokens per packed row; 0 takes --max_length");
  o.lazy_tokenize = flags.boolean("lazy_tokenize");
  o.streaming = flags.boolean("streaming");
  o.shuffle_buffer_size = flags.integer("shuffle_buffer_size");
  problems.at_least("shuffle_buffer_size", o.shuffle_buffer_size, 0, "rows held for shuffling; 1 keeps file order");
  o.cached_dataset = flags.list("cached_dataset");
  o.cached_val_dataset = flags.list("cached_val_dataset");
  const bool lazy = o.lazy_tokenize, streaming = o.streaming;
  problems.check(!(lazy && streaming), "--lazy_tokenize and --streaming do not go together (as ms-swift)",
                 "--streaming already encodes rows as they are drawn: drop --lazy_tokenize");
  problems.check(!o.packing || (!lazy && !streaming),
                 std::string("--packing needs every sample encoded up front, so not --") + (lazy ? "lazy_tokenize" : "streaming"),
                 "drop --packing, or encode up front (--lazy_tokenize false --streaming false)");
  problems.check(o.cached_dataset.empty() || (!lazy && !streaming),
                 std::string("--cached_dataset is already tokenised; --") + (lazy ? "lazy_tokenize" : "streaming") + " does not apply",
                 "drop --lazy_tokenize/--streaming, or train from --dataset");
  return o;
}

}  // namespace swift::data
