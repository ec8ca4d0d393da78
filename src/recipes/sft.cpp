// swift sft / swift pt: supervised fine-tuning and (continued) pretraining, full, LoRA or QLoRA, on the training
// job (train/trainer.h) with the causal LM objective. pt is the same job with plain text instead of a chat template,
// loss on every token, and full fine-tuning by default.
#include "swift/cli/common_setup.h"
#include "swift/recipes/commands.h"
#include "swift/train/causal_lm_objective.h"
#include "swift/train/trainer.h"

namespace swift::recipes {

namespace {

train::TrainingFlagDefaults defaults(bool pretrain) {
  train::TrainingFlagDefaults d;
  d.pretrain = pretrain;
  return d;
}

int run(const std::string& command, bool pretrain, const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags(command, train::training_flags(defaults(pretrain)), args);
  cli::apply_common_flags(flags);
  cli::Problems problems;
  const train::TrainingOptions options = train::training_options(flags, problems);
  problems.raise();  // every problem with the command line at once, before anything is loaded
  train::TrainingHooks hooks;
  hooks.make_objective = [](const train::ObjectiveContext& c) {
    return train::causal_lm_objective(c.options.data.padding_free);
  };
  return train::run_training(options, hooks);
}

}  // namespace

std::vector<cli::FlagSpec> sft_flags() { return train::training_flags(defaults(false)); }
std::vector<cli::FlagSpec> pt_flags() { return train::training_flags(defaults(true)); }
int run_sft(const std::vector<std::string>& args) { return run("sft", false, args); }
int run_pt(const std::vector<std::string>& args) { return run("pt", true, args); }

}  // namespace swift::recipes
