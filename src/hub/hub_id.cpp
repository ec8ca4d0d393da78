// Repository ids and ms-swift's dataset id syntax.
#include "swift/hub/hub_id.h"

#include <cctype>
#include <cstring>

namespace swift::hub {

std::string hub_name(Hub hub) { return hub == Hub::kHuggingFace ? "Hugging Face" : "ModelScope"; }

std::string repo_type_name(RepoType type) { return type == RepoType::kDataset ? "dataset" : "model"; }

namespace {
bool is_id_part(const std::string& part) {
  if (part.empty() || part.size() > 96 || part.front() == '.' || part.front() == '-') return false;
  if (part.find("..") != std::string::npos) return false;
  for (unsigned char c : part)
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}
}  // namespace

bool is_repo_id(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || text.find('/', slash + 1) != std::string::npos) return false;
  return is_id_part(text.substr(0, slash)) && is_id_part(text.substr(slash + 1));
}

std::optional<DatasetId> parse_dataset_id(const std::string& text) {
  DatasetId id;
  std::string rest = text;
  if (const auto sep = rest.find("::"); sep != std::string::npos) {
    std::string prefix = rest.substr(0, sep);
    for (auto& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (prefix == "hf") id.hub = Hub::kHuggingFace;
    else if (prefix == "ms") id.hub = Hub::kModelScope;
    else return std::nullopt;
    rest = rest.substr(sep + 2);
  }
  if (const auto colon = rest.find(':'); colon != std::string::npos) {
    std::string subsets = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    size_t start = 0;
    while (start <= subsets.size()) {
      const auto end = subsets.find('/', start);
      std::string subset = subsets.substr(start, end == std::string::npos ? std::string::npos : end - start);
      while (!subset.empty() && std::isspace(static_cast<unsigned char>(subset.back()))) subset.pop_back();
      while (!subset.empty() && std::isspace(static_cast<unsigned char>(subset.front()))) subset.erase(0, 1);
      if (subset.empty()) return std::nullopt;
      id.subsets.push_back(subset);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  if (!is_repo_id(rest)) return std::nullopt;
  // "data/train.jsonl" that does not exist is a missing file, not a repository to look for.
  std::string lower = rest;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* ext : {".jsonl", ".json", ".csv", ".txt", ".parquet"})
    if (lower.size() > std::strlen(ext) && lower.compare(lower.size() - std::strlen(ext), std::string::npos, ext) == 0)
      return std::nullopt;
  id.repo_id = rest;
  return id;
}

}  // namespace swift::hub
