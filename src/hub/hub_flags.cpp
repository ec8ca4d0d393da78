// --use_hf, --hub_token, --revision.
#include "swift/hub/hub_flags.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace swift::hub {

std::vector<cli::FlagSpec> hub_flags() {
  using cli::FlagType;
  return {
      {"use_hf", FlagType::kBool, "false",
       "look model and dataset ids (org/name) up on Hugging Face instead of ModelScope (as USE_HF=1; docs/hub.md)"},
      {"hub_token", FlagType::kString, "", "token for private or gated hub repositories (default: HF_TOKEN / MODELSCOPE_API_TOKEN)"},
      {"revision", FlagType::kString, "", "branch, tag or commit of a hub model id (default: main / master)",
       {"model_revision"}},
  };
}

HubOptions hub_options(const cli::Flags& flags) {
  HubOptions o;
  // As ms-swift: --use_hf true or USE_HF=1 choose Hugging Face; --use_hf false leaves USE_HF to decide.
  if (flags.declared("use_hf") && flags.boolean("use_hf")) {
    o.use_hf = true;
    ::setenv("USE_HF", "1", 1);  // as ms-swift (base_args.py): later lookups in this process (and its ranks) follow
  }
  if (flags.declared("hub_token")) o.token = flags.str("hub_token");
  if (flags.declared("revision")) o.revision = flags.str("revision");
  return o;
}

void redact_hub_token(nlohmann::json& args) {
  if (args.is_object() && args.contains("hub_token") && args["hub_token"].is_string() &&
      !args["hub_token"].get<std::string>().empty())
    args["hub_token"] = "***";
}

}  // namespace swift::hub
