// Choosing a dataset repository's training files: README.md's YAML configs, else split names in file names.
#include "swift/hub/dataset_files.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "swift/core/error.h"

namespace swift::hub {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const auto end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// One path part against one pattern part: '*', '?', '[...]' (with '!' or '^' negation).
bool match_part(const char* p, const char* s) {
  for (; *p; ++p, ++s) {
    if (*p == '*') {
      while (*(p + 1) == '*') ++p;
      for (const char* rest = s;; ++rest) {
        if (match_part(p + 1, rest)) return true;
        if (!*rest) return false;
      }
    }
    if (!*s) return false;
    if (*p == '?') continue;
    if (*p == '[') {
      const char* q = p + 1;
      const bool negate = *q == '!' || *q == '^';
      if (negate) ++q;
      bool found = false;
      for (; *q && *q != ']'; ++q) {
        if (*(q + 1) == '-' && *(q + 2) && *(q + 2) != ']') {
          found = found || (*s >= *q && *s <= *(q + 2));
          q += 2;
        } else {
          found = found || *s == *q;
        }
      }
      if (!*q) return *p == *s;  // an unclosed '[' is a literal
      if (found == negate) return false;
      p = q;
      continue;
    }
    if (*p != *s) return false;
  }
  return *s == '\0';
}

bool match_parts(const std::vector<std::string>& pattern, size_t pi, const std::vector<std::string>& path, size_t si) {
  if (pi == pattern.size()) return si == path.size();
  if (pattern[pi] == "**") {
    for (size_t k = si; k <= path.size(); ++k)
      if (match_parts(pattern, pi + 1, path, k)) return true;
    return false;
  }
  return si < path.size() && match_part(pattern[pi].c_str(), path[si].c_str()) && match_parts(pattern, pi + 1, path, si + 1);
}

// The split a path is named for, from the words of its parts ("data/train-00000-of-00002.jsonl": train), as the
// datasets library's default split patterns; "" when none.
std::string split_of(const std::string& path) {
  static const std::map<std::string, std::string> kWords = {
      {"train", "train"}, {"training", "train"},    {"test", "test"},          {"testing", "test"},
      {"eval", "test"},   {"evaluation", "test"},   {"validation", "validation"}, {"valid", "validation"},
      {"val", "validation"}, {"dev", "validation"},
  };
  for (const auto& part : split(lower(path), '/')) {
    std::string word;
    for (size_t i = 0; i <= part.size(); ++i) {
      const char c = i < part.size() ? part[i] : '.';
      if (c == '-' || c == '_' || c == '.' || c == ' ' || std::isdigit(static_cast<unsigned char>(c))) {
        if (const auto it = kWords.find(word); it != kWords.end()) return it->second;
        word.clear();
      } else {
        word += c;
      }
    }
  }
  return "";
}

bool hidden(const std::string& path) {
  for (const auto& part : split(path, '/'))
    if (part.rfind(".", 0) == 0 || part.rfind("__", 0) == 0) return true;  // as the datasets library skips them
  return false;
}

// README.md's YAML header ("---" lines around it); null when there is none or it does not parse.
YAML::Node front_matter(const std::string& readme) {
  if (readme.rfind("---", 0) != 0) return YAML::Node();
  const auto body = readme.find('\n');
  if (body == std::string::npos) return YAML::Node();
  auto end = readme.find("\n---", body);
  if (end == std::string::npos) return YAML::Node();
  try {
    return YAML::Load(readme.substr(body + 1, end - body));
  } catch (const YAML::Exception&) {
    return YAML::Node();
  }
}

struct Config {
  std::string name;
  bool is_default = false;
  std::vector<std::string> train_patterns;  // data_files of split train (or unsplit)
};

std::vector<std::string> as_strings(const YAML::Node& node) {
  std::vector<std::string> out;
  if (node.IsScalar()) out.push_back(node.as<std::string>());
  if (node.IsSequence())
    for (const auto& item : node)
      if (item.IsScalar()) out.push_back(item.as<std::string>());
  return out;
}

// data_files: "pattern", [patterns], [{split, path}], or {split: path}.
std::vector<std::string> train_patterns(const YAML::Node& data_files) {
  if (!data_files || data_files.IsNull()) return {};
  if (data_files.IsScalar()) return {data_files.as<std::string>()};
  std::vector<std::string> patterns;
  if (data_files.IsMap()) {
    for (const auto& kv : data_files)
      if (kv.first.as<std::string>() == "train")
        for (const auto& p : as_strings(kv.second)) patterns.push_back(p);
    return patterns;
  }
  if (data_files.IsSequence()) {
    for (const auto& item : data_files) {
      if (item.IsScalar()) patterns.push_back(item.as<std::string>());
      else if (item.IsMap() && (!item["split"] || item["split"].as<std::string>() == "train"))
        for (const auto& p : as_strings(item["path"])) patterns.push_back(p);
    }
  }
  return patterns;
}

std::vector<Config> readme_configs(const std::string& readme) {
  std::vector<Config> configs;
  const YAML::Node meta = front_matter(readme);
  if (!meta.IsMap() || !meta["configs"] || !meta["configs"].IsSequence()) return configs;
  try {
    for (const auto& c : meta["configs"]) {
      if (!c.IsMap()) continue;
      Config config;
      config.name = c["config_name"] ? c["config_name"].as<std::string>() : "default";
      config.is_default = c["default"] && c["default"].IsScalar() && c["default"].as<bool>(false);
      config.train_patterns = train_patterns(c["data_files"]);
      configs.push_back(config);
    }
  } catch (const YAML::Exception&) {
    return {};
  }
  return configs;
}

std::string names(const std::vector<Config>& configs) {
  std::string out;
  for (const auto& c : configs) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
  std::string p = pattern;
  while (p.rfind("./", 0) == 0) p = p.substr(2);
  return match_parts(split(p, '/'), 0, split(path, '/'), 0);
}

bool is_readable_data_file(const std::string& path) {
  const std::string p = lower(path);
  return ends_with(p, ".jsonl") || ends_with(p, ".json") || ends_with(p, ".csv") || ends_with(p, ".parquet");
}

bool is_unsupported_data_file(const std::string& path) {
  const std::string p = lower(path);
  for (const char* ext : {".arrow", ".jsonl.gz", ".json.gz", ".csv.gz", ".zst", ".zip", ".tar", ".tsv"})
    if (ends_with(p, ext)) return true;
  return false;
}

std::vector<std::string> select_dataset_files(const std::vector<std::string>& repo_files, const std::string& readme,
                                              const std::vector<std::string>& subsets, const std::string& repo_id) {
  std::vector<std::string> candidates;  // rows, in any format
  for (const auto& f : repo_files)
    if (!hidden(f) && (is_readable_data_file(f) || is_unsupported_data_file(f)) && lower(f) != "dataset_infos.json" &&
        lower(f) != "dataset_info.json")
      candidates.push_back(f);
  std::sort(candidates.begin(), candidates.end());

  std::vector<std::string> chosen;
  const auto configs = readme_configs(readme);
  if (!configs.empty()) {
    // ms-swift's subset choice: the one given; else the only one, the default one, or "default".
    std::vector<const Config*> picked;
    if (subsets.empty()) {
      const Config* only = configs.size() == 1 ? &configs[0] : nullptr;
      for (const auto& c : configs)
        if (!only && (c.is_default || c.name == "default")) only = &c;
      SWIFT_CHECK(only != nullptr, UsageError,
                  "dataset " + repo_id + " has several subsets (" + names(configs) + ") and none is the default",
                  "name one as ms-swift does: --dataset " + repo_id + ":" + configs[0].name);
      picked.push_back(only);
    } else if (subsets.size() == 1 && subsets[0] == "all") {
      for (const auto& c : configs) picked.push_back(&c);
    } else {
      for (const auto& s : subsets) {
        const auto it = std::find_if(configs.begin(), configs.end(), [&](const Config& c) { return c.name == s; });
        SWIFT_CHECK(it != configs.end(), UsageError, "dataset " + repo_id + " has no subset '" + s + "'",
                    "its subsets are: " + names(configs));
        picked.push_back(&*it);
      }
    }
    for (const Config* c : picked)
      for (const auto& f : candidates)
        if (std::any_of(c->train_patterns.begin(), c->train_patterns.end(), [&](const auto& p) { return glob_match(p, f); }) &&
            std::find(chosen.begin(), chosen.end(), f) == chosen.end())
          chosen.push_back(f);
  } else {
    std::vector<std::string> pool = candidates;
    const bool named_subset = !subsets.empty() && !(subsets.size() == 1 && (subsets[0] == "default" || subsets[0] == "all"));
    if (named_subset) {  // without configs a subset is a folder of the repository
      pool.clear();
      for (const auto& s : subsets)
        for (const auto& f : candidates)
          if (f.rfind(s + "/", 0) == 0 || f.rfind("data/" + s + "/", 0) == 0) pool.push_back(f);
      SWIFT_CHECK(!pool.empty(), UsageError,
                  "dataset " + repo_id + " has no subset '" + subsets[0] + "' (no README.md configs, no such folder)",
                  "drop ':" + subsets[0] + "' to use the whole dataset");
    }
    const bool any_split = std::any_of(pool.begin(), pool.end(), [](const auto& f) { return !split_of(f).empty(); });
    for (const auto& f : pool)
      if (!any_split || split_of(f) == "train") chosen.push_back(f);
  }

  std::vector<std::string> readable, unsupported;
  for (const auto& f : chosen) (is_readable_data_file(f) ? readable : unsupported).push_back(f);
  SWIFT_CHECK(unsupported.empty() || !readable.empty(), DataError,
              "dataset " + repo_id + " keeps its rows in " + unsupported.front() +
                  (unsupported.size() > 1 ? " (and " + std::to_string(unsupported.size() - 1) + " more)" : "") +
                  ": swift reads .jsonl, .json, .csv and .parquet, not Arrow or compressed files",
              "convert it once, e.g. `python -c \"import datasets; datasets.Dataset.from_file('x.arrow').to_json('x.jsonl', "
              "force_ascii=False)\"`, and pass the .jsonl file");
  SWIFT_CHECK(!readable.empty(), DataError, "dataset " + repo_id + " has no training files (.jsonl, .json, .csv or .parquet)",
              "check the id; a dataset defined by a loading script (.py) cannot be read by swift");
  return readable;
}

}  // namespace swift::hub
