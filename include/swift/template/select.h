// Which chat template a run uses, in ms-swift's order: --template, else the "template" a checkpoint's args.json
// records (ms-swift writes it into every output folder), else the model family's default.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace swift::templates {

struct TemplateChoice {
  std::string name;    // a built-in template name
  std::string source;  // where it came from: "--template", "/ckpt/args.json", "the default for model_type qwen3"
};

// The "template" value of dir/args.json; nullopt when the file is absent or has no (or a null) "template".
// DataError naming the file when it is unreadable or not a JSON object.
std::optional<std::string> read_args_json_template(const std::filesystem::path& dir);

// flag: --template ("" when not given). checkpoint_dirs: folders whose args.json may name the template, in
// priority order (e.g. --adapters, then --model); the first that names one wins. family_default: the model
// family's default template ("" when unknown), described as `family_source` in messages.
// UsageError listing the templates when the chosen name is unknown (naming where it came from), or when nothing
// chooses one.
TemplateChoice choose_template(const std::string& flag, const std::vector<std::filesystem::path>& checkpoint_dirs,
                               const std::string& family_default, const std::string& family_source = "");

}  // namespace swift::templates
