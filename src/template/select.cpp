// Choosing the chat template: --template, a checkpoint's args.json, the model family's default.
#include "swift/template/select.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "swift/core/error.h"
#include "swift/template/template_meta.h"

namespace swift::templates {

namespace fs = std::filesystem;

std::optional<std::string> read_args_json_template(const fs::path& dir) {
  const fs::path file = dir / "args.json";
  if (!fs::is_regular_file(file)) return std::nullopt;
  std::ifstream in(file);
  SWIFT_CHECK(in.good(), DataError, "cannot read " + file.string(), "check the file's permissions");
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  SWIFT_CHECK(j.is_object(), DataError, file.string() + " is not a JSON object",
              "the file may be truncated; delete it or pass --template explicitly");
  auto it = j.find("template");
  if (it == j.end() || it->is_null()) return std::nullopt;
  SWIFT_CHECK(it->is_string(), DataError, file.string() + ": \"template\" must be a string",
              "fix the file or pass --template explicitly");
  if (it->get<std::string>().empty()) return std::nullopt;
  return it->get<std::string>();
}

TemplateChoice choose_template(const std::string& flag, const std::vector<fs::path>& checkpoint_dirs,
                               const std::string& family_default, const std::string& family_source) {
  auto checked = [](TemplateChoice choice) {
    try {
      find_template_meta(choice.name);
    } catch (UserError& e) {
      e.add_context(choice.source);
      throw;
    }
    return choice;
  };
  if (!flag.empty()) return checked({flag, "--template"});
  for (const auto& dir : checkpoint_dirs) {
    if (dir.empty()) continue;
    if (auto name = read_args_json_template(dir)) return checked({*name, (dir / "args.json").string()});
  }
  if (!family_default.empty()) {
    return checked({family_default, family_source.empty() ? "the model family's default" : family_source});
  }
  throw UsageError("no chat template is known for this model", "pass --template with one of: " +
                                                                   template_names_joined() +
                                                                   ", or --use_chat_template false");
}

}  // namespace swift::templates
