// Flag tables, parsing (command line and YAML/JSON config files) and help text.
#include "swift/cli/flags.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "swift/core/error.h"

namespace swift::cli {

namespace {

std::string normalise(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const FlagSpec* find_spec(const std::vector<FlagSpec>& specs, const std::string& name) {
  for (const auto& s : specs) {
    if (s.name == name) return &s;
    for (const auto& alias : s.aliases)
      if (alias == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> names_of(const std::vector<FlagSpec>& specs) {
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  return names;
}

[[noreturn]] void unknown_flag(const std::string& command, const std::string& name, const std::vector<FlagSpec>& specs,
                               const std::string& where) {
  const std::string best = closest_match(name, names_of(specs));
  throw UsageError("unknown flag --" + name + " for 'swift " + command + "'" + where,
                   (best.empty() ? std::string() : "did you mean --" + best + "? ") + "see 'swift " + command +
                       " --help'");
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string yaml_scalar(const YAML::Node& node) {
  return node.IsNull() ? std::string() : node.as<std::string>();
}

// A node as flow-style YAML, for messages.
std::string yaml_text(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

// Expands a YAML/JSON config file into (flag, values) pairs, in file order.
std::vector<std::pair<std::string, std::vector<std::string>>> read_config_file(const std::string& command,
                                                                               const std::string& path,
                                                                               const std::vector<FlagSpec>& specs) {
  std::error_code error;  // the non-throwing form: a name too long or a denied folder is the user's to fix
  const bool found = std::filesystem::is_regular_file(path, error);
  SWIFT_CHECK(found, UsageError,
              "config file " + path + (error ? " cannot be read: " + error.message() : std::string(" does not exist")),
              "give a YAML or JSON file of flags as the first argument, or flags only");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);  // YAML 1.2 reads JSON too
  } catch (const YAML::Exception& e) {
    throw UsageError("config file " + path + " is not valid YAML/JSON: " + e.what(), "fix the file");
  }
  SWIFT_CHECK(root.IsMap(), UsageError, "config file " + path + " must be a mapping of flag: value",
              "write one 'flag: value' per line, e.g. 'model: configs/models/qwen3-tiny'");
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& kv : root) {
    SWIFT_CHECK(kv.first.IsScalar(), UsageError,
                "config file " + path + ": a key is " + yaml_text(kv.first) + ", not a flag name",
                "write one 'flag: value' per line, e.g. 'model: configs/models/qwen3-tiny'");
    const FlagSpec* spec = find_spec(specs, normalise(kv.first.as<std::string>()));
    if (!spec) unknown_flag(command, normalise(kv.first.as<std::string>()), specs, " (in " + path + ")");
    const std::string name = spec->name;
    std::vector<std::string> values;
    if (kv.second.IsSequence()) {
      SWIFT_CHECK(spec->type == FlagType::kList, UsageError,
                  "config file " + path + ": '" + name + "' takes one value, got a list " + yaml_text(kv.second),
                  "write it as 'name: value'");
      for (const auto& item : kv.second) {
        SWIFT_CHECK(item.IsScalar() || item.IsNull(), UsageError,
                    "config file " + path + ": '" + name + "' must be a list of plain values, got " + yaml_text(kv.second),
                    "write it as 'name: [a, b]' or one '- a' line per value");
        values.push_back(yaml_scalar(item));
      }
    } else if (kv.second.IsScalar() || kv.second.IsNull()) {
      values.push_back(yaml_scalar(kv.second));
    } else {
      throw UsageError("config file " + path + ": '" + name + "' must be a value or a list", "fix the file");
    }
    out.emplace_back(name, values);
  }
  return out;
}

bool is_config_file(const std::string& arg) {
  auto ends = [&](const std::string& s) { return arg.size() > s.size() && arg.compare(arg.size() - s.size(), s.size(), s) == 0; };
  return arg.rfind("--", 0) != 0 && (ends(".yaml") || ends(".yml") || ends(".json"));
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // Close enough to be a typo: at most a third of the word wrong (and at least 2 edits allowed).
  return best_distance <= std::max<size_t>(2, word.size() / 3) ? best : std::string();
}

bool wants_help(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--help") != args.end() ||
         std::find(args.begin(), args.end(), "-h") != args.end();
}

Flags parse_flags(const std::string& command, const std::vector<FlagSpec>& specs, const std::vector<std::string>& args) {
  std::map<std::string, std::vector<std::string>> values;
  std::map<std::string, std::string> origin;
  for (const auto& s : specs)
    values[s.name] = s.type == FlagType::kList ? split_words(s.default_value) : std::vector<std::string>{s.default_value};

  size_t i = 0;
  if (!args.empty() && is_config_file(args[0])) {
    for (auto& [name, v] : read_config_file(command, args[0], specs)) {
      values[name] = v;
      origin[name] = args[0];
    }
    i = 1;
  }
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> given;  // flag -> (spelling, value) used
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    SWIFT_CHECK(arg.rfind("--", 0) == 0 && arg.size() > 2, UsageError,
                "unexpected argument '" + arg + "' for 'swift " + command + "'",
                "flags look like --name value; a config file may only come first");
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    name = normalise(name);
    const FlagSpec* spec = find_spec(specs, name);
    if (!spec) unknown_flag(command, name, specs, "");
    const std::string spelling = name;
    name = spec->name;  // an alias stores under the flag's own name
    std::vector<std::string> v;
    auto next_is_value = [&] { return i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0; };
    if (inline_value) {
      v = spec->type == FlagType::kList ? split_words(*inline_value) : std::vector<std::string>{*inline_value};
    } else if (spec->type == FlagType::kBool) {
      v = {next_is_value() ? args[++i] : "true"};  // a bare --flag means true
    } else if (spec->type == FlagType::kList) {
      while (next_is_value()) v.push_back(args[++i]);
    } else {
      SWIFT_CHECK(next_is_value(), UsageError, "--" + name + " needs a value",
                  "write --" + name + " <value>; see 'swift " + command + " --help'");
      v = {args[++i]};
    }
    // Two spellings of one flag (--output_dir and Megatron's --save) that disagree: which one was meant is unknown.
    if (auto earlier = given.find(name); earlier != given.end() && earlier->second.first != spelling)
      SWIFT_CHECK(earlier->second.second == v, UsageError,
                  "--" + earlier->second.first + " and --" + spelling + " are the same flag, given different values",
                  "keep one of them");
    given[name] = {spelling, v};
    values[name] = v;
    origin[name] = "";
  }
  return Flags(command, specs, std::move(values), std::move(origin));
}

Flags::Flags(std::string command, std::vector<FlagSpec> specs, std::map<std::string, std::vector<std::string>> values,
             std::map<std::string, std::string> origin)
    : command_(std::move(command)), specs_(std::move(specs)), values_(std::move(values)), origin_(std::move(origin)) {}

const FlagSpec& Flags::spec(const std::string& name) const {
  const FlagSpec* s = find_spec(specs_, name);
  SWIFT_ASSERT(s != nullptr, "flag --" + name + " read by 'swift " + command_ + "' but not declared");
  return *s;
}

bool Flags::declared(const std::string& name) const { return find_spec(specs_, name) != nullptr; }

std::string Flags::where(const std::string& name) const {
  auto it = origin_.find(name);
  return "--" + name + (it != origin_.end() && !it->second.empty() ? " (from " + it->second + ")" : "");
}

std::string Flags::str(const std::string& name) const {
  spec(name);
  const auto& v = values_.at(name);
  return v.empty() ? std::string() : v.front();
}

int64_t Flags::integer(const std::string& name) const {
  SWIFT_ASSERT(spec(name).type == FlagType::kInt, "--" + name + " is not an integer flag");
  const std::string text = str(name);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  SWIFT_CHECK(!text.empty() && end && *end == '\0' && errno == 0, UsageError,
              where(name) + " expects an integer, got '" + text + "'", "e.g. --" + name + " 8");
  return v;
}

double Flags::number(const std::string& name) const {
  SWIFT_ASSERT(spec(name).type == FlagType::kFloat, "--" + name + " is not a number flag");
  const std::string text = str(name);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  SWIFT_CHECK(!text.empty() && end && *end == '\0', UsageError, where(name) + " expects a number, got '" + text + "'",
              "e.g. --" + name + " 0.7");
  return v;
}

bool Flags::boolean(const std::string& name) const {
  SWIFT_ASSERT(spec(name).type == FlagType::kBool, "--" + name + " is not a boolean flag");
  std::string text = str(name);
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no" || text.empty()) return false;
  throw UsageError(where(name) + " expects true or false, got '" + str(name) + "'", "e.g. --" + name + " true");
}

std::vector<std::string> Flags::list(const std::string& name) const {
  spec(name);
  return values_.at(name);
}

nlohmann::json Flags::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& s : specs_) {
    const auto& v = values_.at(s.name);
    if (s.type == FlagType::kList) {
      out[s.name] = v;
    } else if (v.empty() || v.front().empty()) {
      out[s.name] = nullptr;
    } else if (s.type == FlagType::kInt) {
      out[s.name] = integer(s.name);
    } else if (s.type == FlagType::kFloat) {
      out[s.name] = number(s.name);
    } else if (s.type == FlagType::kBool) {
      out[s.name] = boolean(s.name);
    } else {
      out[s.name] = v.front();
    }
  }
  return out;
}

std::string format_help(const std::string& command, const std::string& summary, const std::vector<FlagSpec>& specs) {
  std::ostringstream out;
  out << "usage: swift " << command << " [config.yaml|config.json] [--flag value ...]\n\n" << summary << "\n\nflags:\n";
  for (const auto& s : specs) {
    const char* type = s.type == FlagType::kInt     ? "int"
                       : s.type == FlagType::kFloat ? "float"
                       : s.type == FlagType::kBool  ? "bool"
                       : s.type == FlagType::kList  ? "list"
                                                    : "str";
    out << "  --" << s.name << " <" << type << ">";
    for (const auto& alias : s.aliases) out << " (also --" << alias << ")";
    out << "  (default: " << (s.default_value.empty() ? "none" : s.default_value) << ")\n";
    out << "      " << s.help << "\n";
  }
  out << "\nDashes and underscores are interchangeable (--max-new-tokens = --max_new_tokens).\n";
  return out.str();
}

std::vector<FlagSpec> common_flags() {
  return {
      {"log_level", FlagType::kString, "", "trace, debug, info, warning, error (default: LOG_LEVEL, else info)"},
      {"device", FlagType::kString, "auto", "auto (CUDA if available), cpu, cuda, cuda:N"},
      {"torch_dtype", FlagType::kString, "auto", "weights' dtype: auto (the checkpoint's), float32, bfloat16, float16"},
      {"num_threads", FlagType::kInt, "0", "CPU intra-op threads; 0 = OMP_NUM_THREADS, else the core count"},
      {"seed", FlagType::kInt, "42", "random seed (initialisation, sampling, shuffling)"},
      {"attn_impl", FlagType::kString, "",
       "attention kernel: sdpa (default: LibTorch picks), flash_attn (also flash_attention_2/3), memory_efficient, "
       "eager (math)"},
      {"use_flash_attn", FlagType::kBool, "false", "true: --attn_impl flash_attn (older ms-swift switch)",
       {"use_flash_attention"}},
  };
}

}  // namespace swift::cli
