// The hub flags of every command that reads --model (ms-swift's names): --use_hf, --hub_token, --revision (alias
// --model_revision). The hub itself (swift_hub) does not know the flag tables; this is its bridge to them.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <vector>

#include "swift/cli/flags.h"
#include "swift/hub/hub_settings.h"

namespace swift::hub {

std::vector<cli::FlagSpec> hub_flags();

// The flags a command declares of hub_flags(); the others stay unset (the environment decides).
HubOptions hub_options(const cli::Flags& flags);

// A run's args.json must not keep a token: --hub_token's value replaced by "***".
void redact_hub_token(nlohmann::json& args);

}  // namespace swift::hub
