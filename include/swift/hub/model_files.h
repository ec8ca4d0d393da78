// Which files of a model repository swift reads, and whether a local folder has them all: config.json, the
// safetensors weights (with their index), the tokenizer and generation files. Not *.bin, *.pt, *.gguf, ONNX or
// subfolders: swift loads safetensors from the folder's top level only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "swift/hub/repo_listing.h"

namespace swift::hub {

bool is_model_file(const std::string& path);

// The files of `files` swift needs. When there are no safetensors weights, `note` says so (the repository only has
// weights in formats swift does not read): config and tokenizer are still fetched, the loader then names the gap.
std::vector<RemoteFile> select_model_files(const std::vector<RemoteFile>& files, std::string* note = nullptr);

// What a model folder lacks to be loaded: "config.json", "model-00002-of-00002.safetensors", "*.safetensors
// weights", "tokenizer.json or tokenizer.model"; empty when complete. A dangling snapshot symlink counts as missing.
std::vector<std::string> missing_model_parts(const std::filesystem::path& dir);

}  // namespace swift::hub
