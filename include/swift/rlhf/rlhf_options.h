// swift rlhf's own flag table and options: the training job's (with rlhf's defaults: --loss_scale by method, dropout
// off) and the method's (--rlhf_type, --beta, --loss_type, ...), parsed and validated together, every problem at
// once, before anything is loaded.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/rlhf/preference_loss.h"
#include "swift/train/training_options.h"

namespace swift::rlhf {

struct RlhfOptions {
  train::TrainingOptions training;
  std::string rlhf_type = "dpo";  // dpo, cpo, simpo, orpo, kto or rm
  PreferenceConfig preference;    // the preference methods' settings (not rm)
  std::optional<double> center_rewards_coefficient;  // rm
  std::filesystem::path ref_model;  // --ref_model (dpo, kto)
  bool reward_model() const { return rlhf_type == "rm"; }
};

std::vector<cli::FlagSpec> rlhf_flags();

// The options of `flags` (parsed against rlhf_flags()); a UsageError listing every problem when there are any.
RlhfOptions rlhf_options(const cli::Flags& flags);

}  // namespace swift::rlhf
