// What decides where an id is looked up and how the hubs are reached: the command's flags (HubOptions) and the
// environment the Python tools read too (HubEnvironment), so swift, ms-swift, huggingface_hub and modelscope share
// one configuration and one cache.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "swift/hub/hub_id.h"

namespace swift::hub {

// The flags: --use_hf, --hub_token, --revision (ms-swift's --model_revision).
struct HubOptions {
  std::optional<bool> use_hf;  // unset: USE_HF from the environment, else ModelScope (ms-swift's default)
  std::string token;           // empty: HF_TOKEN (or the saved login) / MODELSCOPE_API_TOKEN
  std::string revision;        // a branch, tag or commit; empty: main (Hugging Face) / master (ModelScope)
};

struct HubEnvironment {
  bool use_hf = false;                  // USE_HF (1/true/yes/on)
  bool offline = false;                 // HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE or MODELSCOPE_OFFLINE: caches only
  std::string hf_endpoint;              // HF_ENDPOINT (a mirror), else https://huggingface.co; no trailing '/'
  std::string modelscope_endpoint;      // MODELSCOPE_ENDPOINT, else MODELSCOPE_DOMAIN, else https://modelscope.cn
  std::filesystem::path hf_cache;       // HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub
  std::filesystem::path modelscope_cache;  // MODELSCOPE_CACHE, else ~/.cache/modelscope (modelscope >= 1.38)
  std::string hf_token;                 // HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file `hf auth login` wrote
  std::string modelscope_token;         // MODELSCOPE_API_TOKEN
  long connect_timeout_s = 10;          // a host that does not answer
  long stall_timeout_s = 30;            // HF_HUB_DOWNLOAD_TIMEOUT: no byte for this long aborts a transfer
  bool progress = true;                 // off with HF_HUB_DISABLE_PROGRESS_BARS and on ranks other than 0

  static HubEnvironment from_process();  // reads the environment variables above
};

// "1", "true", "yes", "on", "t", "y" (any case), as Python's strtobool.
bool env_true(const char* name);

// The hub an id goes to: --use_hf when given, else USE_HF; a dataset's "hf::"/"ms::" prefix overrides both.
Hub choose_hub(const HubOptions& options, const HubEnvironment& env, std::optional<Hub> prefix = std::nullopt);

// The revision to ask `hub` for: --revision, with ms-swift's translation of each hub's default branch name
// (main on Hugging Face is master on ModelScope and back); empty gives the hub's default.
std::string revision_for(Hub hub, const std::string& revision);

// The token for `hub`: --hub_token, else the hub's own from the environment.
std::string token_for(Hub hub, const HubOptions& options, const HubEnvironment& env);

}  // namespace swift::hub
