// Command-line flags as ms-swift spells them: each command declares its flags once in a table (name, type,
// default, help) that drives parsing, --help and the docs. `--name value`, `--name=value`, dashes or
// underscores, a YAML/JSON config file as the first argument (its keys expand into flags; later flags win).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace swift::cli {

enum class FlagType { kString, kInt, kFloat, kBool, kList };

struct FlagSpec {
  std::string name;           // with underscores: "max_new_tokens"
  FlagType type;
  std::string default_value;  // as text; for lists, space separated; "" means unset
  std::string help;
  std::vector<std::string> aliases = {};  // older ms-swift spellings that mean the same flag (--sft_type)
};

// Parsed values, checked against their types when read.
class Flags {
 public:
  Flags(std::string command, std::vector<FlagSpec> specs, std::map<std::string, std::vector<std::string>> values,
        std::map<std::string, std::string> origin);

  std::string str(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  double number(const std::string& name) const;
  bool boolean(const std::string& name) const;
  std::vector<std::string> list(const std::string& name) const;
  // True when the user gave the flag (on the command line or in a config file), not just its default.
  bool given(const std::string& name) const { return origin_.count(name) > 0; }
  // True when the command's table declares the flag (option parsers shared by several commands read a flag only
  // where it exists).
  bool declared(const std::string& name) const;
  const std::string& command() const { return command_; }
  // Every flag with its typed value (null when unset), for a run's args.json.
  nlohmann::json to_json() const;

 private:
  const FlagSpec& spec(const std::string& name) const;
  std::string where(const std::string& name) const;  // "--flag" or "--flag (from config.yaml)"
  std::string command_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, std::string> origin_;  // flag -> "" (command line) or config file
};

// Parses `args` (after the subcommand) against `specs`. Unknown flags are a UsageError naming the closest
// valid flag. `--help` is left to the caller (see wants_help).
Flags parse_flags(const std::string& command, const std::vector<FlagSpec>& specs, const std::vector<std::string>& args);

bool wants_help(const std::vector<std::string>& args);

// `swift <command> --help` text: usage, summary, every flag with its type and default.
std::string format_help(const std::string& command, const std::string& summary, const std::vector<FlagSpec>& specs);

// The candidate closest to `word` by edit distance (for "did you mean"); empty when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// Flags every command shares: --log_level, --device, --torch_dtype, --num_threads, --seed.
std::vector<FlagSpec> common_flags();

}  // namespace swift::cli
