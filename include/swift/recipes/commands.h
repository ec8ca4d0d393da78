// The subcommands of the `swift` binary: one recipe each (src/recipes/<name>.cpp), listed in one table.
#pragma once

#include <string>
#include <vector>

#include "swift/cli/flags.h"

namespace swift::recipes {

struct Command {
  std::string name;
  std::string summary;
  std::vector<cli::FlagSpec> (*flags)();                 // the command's flag table (common flags included)
  int (*run)(const std::vector<std::string>& args);      // args after the subcommand; returns the exit code
};

// Every command that works, in the order `swift --help` lists them.
const std::vector<Command>& commands();

// export: load a model folder (or initialise one from its config) and write it back as a Hugging Face folder.
std::vector<cli::FlagSpec> export_flags();
int run_export(const std::vector<std::string>& args);
// export --to_cached_dataset true: tokenise the dataset once into a cached dataset (src/recipes/cached_dataset.cpp).
int export_cached_dataset(const cli::Flags& flags);
// merge-lora: ms-swift's alias of export --merge_lora true.
int run_merge_lora(const std::vector<std::string>& args);

// infer: interactive chat, or batch answers for --val_dataset into --result_path.
std::vector<cli::FlagSpec> infer_flags();
int run_infer(const std::vector<std::string>& args);

// deploy: an OpenAI-compatible HTTP server with continuous batching (src/recipes/deploy.cpp).
std::vector<cli::FlagSpec> deploy_flags();
int run_deploy(const std::vector<std::string>& args);

// sft / pt: supervised fine-tuning and pretraining, full or LoRA (src/recipes/sft.cpp).
std::vector<cli::FlagSpec> sft_flags();
std::vector<cli::FlagSpec> pt_flags();
int run_sft(const std::vector<std::string>& args);
int run_pt(const std::vector<std::string>& args);

// rlhf: preference alignment (dpo, cpo, simpo, orpo) on the sft training job (src/recipes/rlhf.cpp).
std::vector<cli::FlagSpec> rlhf_flags();
int run_rlhf(const std::vector<std::string>& args);


}  // namespace swift::recipes
