// ms-swift's LoRA flags (--lora_rank, --lora_alpha, --target_modules, --use_dora, ...) into a LoraConfig.
#pragma once

#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/cli/problems.h"
#include "swift/tuners/lora.h"

namespace swift::tuners {

// The flags; `dropout_default` / `dropout_help` replace --lora_dropout's (rlhf turns dropout off).
std::vector<cli::FlagSpec> lora_flags(const std::string& dropout_default = "0.05", const std::string& dropout_help = "");

// The adapter the flags ask for (base_model_name_or_path and task_type are the job's to fill); what is wrong goes
// to `problems`.
LoraConfig lora_config(const cli::Flags& flags, cli::Problems& problems);

}  // namespace swift::tuners
