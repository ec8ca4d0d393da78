// swift rlhf: preference alignment on pairs (chosen vs rejected reply) or labelled replies (KTO), and reward models,
// on the training job sft runs (LoRA, QLoRA, full, several ranks, ZeRO): rlhf's own flags and options
// (rlhf/rlhf_options.h) and its objectives, reference model, KL rows and score head (rlhf/rlhf_job.h); docs/rlhf.md.
#include "swift/cli/common_setup.h"
#include "swift/recipes/commands.h"
#include "swift/rlhf/rlhf_job.h"
#include "swift/rlhf/rlhf_options.h"

namespace swift::recipes {

std::vector<cli::FlagSpec> rlhf_flags() { return rlhf::rlhf_flags(); }

int run_rlhf(const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags("rlhf", rlhf::rlhf_flags(), args);
  cli::apply_common_flags(flags);
  const rlhf::RlhfOptions options = rlhf::rlhf_options(flags);  // every problem at once, before anything is loaded
  return train::run_training(options.training, rlhf::rlhf_hooks(options));
}

}  // namespace swift::recipes
