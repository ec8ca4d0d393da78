// The files a model folder needs.
#include "swift/hub/model_files.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

namespace fs = std::filesystem;

namespace swift::hub {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_weights(const std::string& path) {
  return path.find('/') == std::string::npos && ends_with(path, ".safetensors");
}
}  // namespace

bool is_model_file(const std::string& path) {
  static const std::set<std::string> kFiles = {
      "config.json",           "generation_config.json", "model.safetensors.index.json",
      "tokenizer.json",        "tokenizer_config.json",  "tokenizer.model",
      "special_tokens_map.json", "added_tokens.json",    "vocab.json",
      "merges.txt",            "chat_template.jinja",    "chat_template.json",
  };
  return kFiles.count(path) > 0 || is_weights(path) ||
         (path.find('/') == std::string::npos && ends_with(path, ".safetensors.index.json"));
}

std::vector<RemoteFile> select_model_files(const std::vector<RemoteFile>& files, std::string* note) {
  std::vector<RemoteFile> selected;
  bool weights = false;
  std::vector<std::string> other_weights;
  for (const auto& f : files) {
    if (is_model_file(f.path)) {
      selected.push_back(f);
      weights = weights || is_weights(f.path);
    } else if (f.path.find('/') == std::string::npos &&
               (ends_with(f.path, ".bin") || ends_with(f.path, ".pt") || ends_with(f.path, ".pth") ||
                ends_with(f.path, ".gguf"))) {
      other_weights.push_back(f.path);
    }
  }
  if (!weights && note) {
    *note = other_weights.empty()
                ? "it has no *.safetensors weights"
                : "its weights are " + other_weights.front() + (other_weights.size() > 1 ? " and others" : "") +
                      ", a format swift does not read (only *.safetensors)";
  }
  return selected;
}

std::vector<std::string> missing_model_parts(const fs::path& dir) {
  std::vector<std::string> missing;
  if (!fs::is_directory(dir)) return {"the folder itself"};
  if (!fs::exists(dir / "config.json")) missing.push_back("config.json");
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::ifstream in(index);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      missing.push_back("a readable model.safetensors.index.json");
    } else {
      std::set<std::string> shards;
      for (const auto& [name, shard] : j["weight_map"].items())
        if (shard.is_string()) shards.insert(shard.get<std::string>());
      for (const auto& shard : shards)
        if (!fs::exists(dir / shard)) missing.push_back(shard);
    }
  } else {
    bool any = false;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".safetensors" && fs::exists(entry.path())) any = true;
    if (!any) missing.push_back("*.safetensors weights");
  }
  if (!fs::exists(dir / "tokenizer.json") && !fs::exists(dir / "tokenizer.model"))
    missing.push_back("tokenizer.json or tokenizer.model");
  return missing;
}

}  // namespace swift::hub
