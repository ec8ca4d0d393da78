// Which rows a job reads and how it encodes them, as ms-swift's flags say it (--dataset ... --data_seed, and for
// training commands --packing, --lazy_tokenize, --streaming, --cached_dataset): parsed once into DataOptions, which
// the readers, the encoder and the training data take (training_rows.h, training_data.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/cli/problems.h"
#include "swift/data/dataset.h"
#include "swift/data/example.h"
#include "swift/template/template.h"

namespace swift::data {

struct DataOptions {
  std::vector<std::string> datasets;      // --dataset: files (path#N: N rows) or built-ins
  std::vector<std::string> val_datasets;  // --val_dataset
  double split_dataset_ratio = 0;         // --split_dataset_ratio: held out of --dataset for validation. Default: 0.
  std::map<std::string, std::string> columns;  // --columns renames
  std::vector<std::string> model_name, model_author;  // for swift/self-cognition
  std::string template_name;              // --template. Default: the checkpoint's args.json, else the family's.
  std::optional<std::string> system;      // --system, when given
  std::string agent_template;             // --agent_template ("": the template's own)
  bool use_chat_template = true;          // --use_chat_template (pt: false)
  std::string loss_scale = "default";     // --loss_scale as given ("": the command's default, rlhf)
  bool add_non_thinking_prefix = true;    // --add_non_thinking_prefix (qwen3: replies without thinking get the empty block)
  bool disable_ignore_empty_think = false;  // --disable_ignore_empty_think: score that block (ms-swift's switch)
  int64_t max_length = 0;                 // --max_length. Default: 0, the model's max_position_embeddings.
  Truncation truncation = Truncation::kDelete;  // --truncation_strategy
  std::string truncation_strategy = "delete";   // its spelling, recorded in caches
  int num_proc = 1;                       // --dataset_num_proc: encoding threads
  uint64_t data_seed = 42;                // --data_seed, else --seed
  hub::HubOptions hub;                    // --use_hf, --hub_token: for hub dataset ids (org/name)
  // Training commands only.
  bool packing = false;                   // --packing
  int64_t packing_length = 0;             // --packing_length. Default: 0, --max_length.
  bool padding_free = false;              // --padding_free: a micro-batch's samples in one row (pack_row)
  bool lazy_tokenize = false;             // --lazy_tokenize: encode each row as its batch is drawn
  bool streaming = false;                 // --streaming: read --dataset row by row while training
  int64_t shuffle_buffer_size = 1000;     // --shuffle_buffer_size (streaming)
  std::vector<std::string> cached_dataset, cached_val_dataset;  // --cached_dataset, --cached_val_dataset
  // What a training row is: a conversation (sft, pt), or swift rlhf's pairs and labelled replies.
  templates::TemplateOptions::RowKind row_kind = templates::TemplateOptions::RowKind::kConversation;

  // How data::load_datasets reads the files and built-ins.
  DatasetOptions reading() const;
  // --max_length, or the model's max_position_embeddings when it is 0.
  int64_t max_length_for(int64_t max_position_embeddings) const {
    return max_length > 0 ? max_length : max_position_embeddings;
  }
};

// The flags that say which rows a job reads and how they are encoded: --dataset ... --data_seed. One table for
// sft/pt/rlhf and `export --to_cached_dataset`, so a cache is made exactly as training would encode. pretrain: pt's
// defaults (plain text, loss on every token). `loss_scale_help` replaces the --loss_scale line (rlhf: its default
// depends on the method).
std::vector<cli::FlagSpec> dataset_flags(bool pretrain, const std::string& loss_scale_default = "",
                                         const std::string& loss_scale_help = "");
// How a training job draws its data: --packing ... --cached_val_dataset.
std::vector<cli::FlagSpec> training_data_flags();

// The options the flags give (the training flags where the command declares them); what is wrong goes to
// `problems`. `seed`: --seed, the default of --data_seed.
DataOptions data_options(const cli::Flags& flags, uint64_t seed, cli::Problems& problems);

}  // namespace swift::data
