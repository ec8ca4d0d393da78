// Where a --model / --dataset value names its files, as ms-swift resolves it: a local path that exists always
// wins; an `org/name` id is looked up in the caches users already have (the chosen hub's, then the other's; a
// complete snapshot there is used without any network), then downloaded from the hub --use_hf / USE_HF choose
// (ModelScope by default, as ms-swift) into that hub's cache. Offline (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE,
// MODELSCOPE_OFFLINE) only the caches count, and a miss names the id and every place looked at.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "swift/hub/hub_id.h"
#include "swift/hub/hub_settings.h"

namespace swift::hub {

// `id_or_path` itself when it exists or is not an `org/name` id (the loader then reports it), else the folder of
// the model's snapshot. `flag` ("--model", "--ref_model") names the value in errors.
std::string resolve_model(const std::string& id_or_path, const HubOptions& options, const std::string& flag = "--model");
std::filesystem::path resolve_model_id(const std::string& repo_id, const HubOptions& options, const HubEnvironment& env,
                                       const std::string& flag = "--model");

// The training files of a dataset id (data::parse_dataset_spec has taken off "#N"), in the cache.
std::vector<std::filesystem::path> resolve_dataset(const DatasetId& id, const HubOptions& options,
                                                   const std::string& flag = "--dataset");
std::vector<std::filesystem::path> resolve_dataset_id(const DatasetId& id, const HubOptions& options,
                                                      const HubEnvironment& env, const std::string& flag = "--dataset");

}  // namespace swift::hub
