// Parity with the models' own Jinja chat templates: render() of each case in render_cases.json equals Hugging Face
// transformers' apply_chat_template(tokenize=False) on the real Qwen3 and Llama 3 tokenizer folders (and Mistral
// 7B Instruct v0.1's published template on the Mistral folder, which lacks one), written by
// the fixture make_reference.sh (SKIPPED when transformers is missing). Exact string equality, with one documented
// differences: Llama 3's Jinja always ends with the assistant header, even when add_generation_prompt is false,
// and Qwen3's thinks unless told otherwise (ms-swift, and so swift, default to enable_thinking=false).
#include <gtest/gtest.h>

#include <cstdlib>

#include "swift/template/template.h"
#include "template_test_util.h"
#include "skip.h"

namespace swift::templates {
namespace {

namespace fs = std::filesystem;

const nlohmann::json& cases_doc() {
  static const nlohmann::json doc =
      test::read_json(fs::path(SWIFT_SOURCE_DIR) / "tests" / "template" / "render_cases.json");
  return doc;
}
const nlohmann::json& cases() { return cases_doc()["cases"]; }

struct Param {
  std::string name, model;
};
void PrintTo(const Param& p, std::ostream* os) { *os << p.model << "/" << p.name; }

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& c : cases()) {
    for (const auto& m : c["models"]) out.push_back({c["name"], m});
  }
  return out;
}

fs::path reference_dir() {
  const char* env = std::getenv("SWIFT_TEMPLATE_REF_DIR");
  return env ? fs::path(env) : fs::path();
}

// The reference text, or "" with GTEST_SKIP-worthy reason in `why`.
std::optional<std::string> reference(const Param& p, std::string& why) {
  fs::path dir = reference_dir();
  if (dir.empty()) {
    why = "SWIFT_TEMPLATE_REF_DIR is not set (run through ctest, whose fixture writes the references)";
    return std::nullopt;
  }
  if (fs::exists(dir / "SKIPPED")) {
    why = test::read_file(dir / "SKIPPED");
    return std::nullopt;
  }
  static const nlohmann::json doc = test::read_json(dir / "jinja_reference.json");
  for (const auto& r : doc["results"]) {
    if (r["name"] == p.name && r["model"] == p.model) return r["text"].get<std::string>();
  }
  why = "no reference for " + p.name + " on " + p.model;
  return std::nullopt;
}

class JinjaParity : public ::testing::TestWithParam<Param> {};

TEST_P(JinjaParity, SameText) {
  const Param& p = GetParam();
  std::string why;
  std::optional<std::string> expected = reference(p, why);
  if (!expected) {
    SWIFT_REFERENCE_MISSING(why);
  }
  const nlohmann::json* c = nullptr;
  for (const auto& x : cases()) {
    if (x["name"] == p.name) c = &x;
  }
  ASSERT_NE(c, nullptr);
  const bool add_generation_prompt = (*c)["add_generation_prompt"];
  // Unset in a case means Hugging Face's default, thinking on (swift's default for qwen3 is ms-swift's: off).
  bool enable_thinking = c->contains("enable_thinking") ? (*c)["enable_thinking"].get<bool>() : true;
  if (p.model == "llama3" && !add_generation_prompt) {
    // Meta Llama 3's Jinja template has no add_generation_prompt test: it always opens an assistant turn.
    const std::string header = "<|start_header_id|>assistant<|end_header_id|>\n\n";
    ASSERT_GE(expected->size(), header.size());
    ASSERT_EQ(expected->substr(expected->size() - header.size()), header);
    expected->resize(expected->size() - header.size());
  }
  Template t(find_template_meta(cases_doc()["templates"][p.model].get<std::string>()), test::real_tokenizer(p.model));
  EXPECT_EQ(t.render(conversation_from_json((*c)["messages"]), add_generation_prompt, enable_thinking), *expected);
}

INSTANTIATE_TEST_SUITE_P(Cases, JinjaParity, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return info.param.model + "_" + info.param.name;
                         });

}  // namespace
}  // namespace swift::templates
