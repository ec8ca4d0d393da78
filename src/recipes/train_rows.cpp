// Loading the rows of a training job (shared by sft/pt and export --to_cached_dataset, so both split alike).
#include "swift/recipes/train_rows.h"

namespace swift::recipes {

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
