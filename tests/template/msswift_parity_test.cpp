// Parity with ms-swift itself: input_ids and labels of ms-swift 4.6's Template.encode (train mode) and its
// inference prompts, recorded in msswift_golden.json by make_msswift_golden.py, for every template and loss rule
// on the real Qwen3, Llama 3 and Mistral tokenizers. Exact equality, token by token.
#include <gtest/gtest.h>

#include <set>

#include "swift/template/agent_template.h"
#include "swift/template/template.h"
#include "template_test_util.h"

namespace swift::templates {
namespace {

const nlohmann::json& golden() {
  static const nlohmann::json doc =
      test::read_json(std::filesystem::path(SWIFT_SOURCE_DIR) / "tests" / "template" / "msswift_golden.json");
  return doc;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& c : golden()["cases"]) names.push_back(c["name"]);
  return names;
}

const nlohmann::json& find_case(const std::string& name) {
  for (const auto& c : golden()["cases"]) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no golden case " + name);
}

class MsSwiftParity : public ::testing::TestWithParam<std::string> {};

TEST_P(MsSwiftParity, SameIdsAndLabels) {
  const nlohmann::json& c = find_case(GetParam());
  TemplateOptions options;
  if (c.contains("system")) options.system = c["system"].get<std::string>();
  if (c.contains("loss_scale")) {
    const LossScale scale = parse_loss_scale(c["loss_scale"].get<std::string>());
    options.loss_rule = scale.rule;
    options.ignore_empty_think = scale.ignore_empty_think;
  }
  std::optional<bool> enable_thinking;
  if (c.contains("enable_thinking")) enable_thinking = c["enable_thinking"].get<bool>();
  if (c.contains("agent_template")) options.agent_template = parse_agent_template(c["agent_template"].get<std::string>());
  Template t(find_template_meta(c["template"].get<std::string>()), test::real_tokenizer(c["tokenizer"]), options);
  Conversation messages = conversation_from_json(c["messages"]);
  // The tools as written (their key order shows in the prompt).
  const Tools tools = c.contains("tools_json") ? parse_tools(nlohmann::ordered_json::parse(c["tools_json"].get<std::string>()))
                                               : Tools{};

  if (c["mode"] == "train") {
    Encoded e = t.encode(messages, &tools);
    EXPECT_EQ(e.input_ids, c["input_ids"].get<std::vector<int64_t>>());
    EXPECT_EQ(e.labels, c["labels"].get<std::vector<int64_t>>());
    if (c.contains("text")) {
      EXPECT_EQ(e.text, c["text"].get<std::string>());
    }
  } else {
    EXPECT_EQ(t.encode_prompt(messages, enable_thinking, PromptEnd::kAuto, &tools), c["input_ids"].get<std::vector<int64_t>>());
    // render() opens the next reply; a conversation ending with a reply is continued instead (its ids above).
    if (c.contains("text") && messages.back().role != Role::kAssistant && tools.empty()) {
      EXPECT_EQ(t.render(messages, true, enable_thinking), c["text"].get<std::string>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, MsSwiftParity, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(MsSwiftGolden, CoversEveryTemplateAndRule) {
  std::set<std::string> templates, rules, modes;
  for (const auto& c : golden()["cases"]) {
    templates.insert(c["template"].get<std::string>());
    if (c.contains("loss_scale")) rules.insert(c["loss_scale"].get<std::string>());
    modes.insert(c["mode"].get<std::string>());
  }
  EXPECT_GE(golden()["cases"].size(), 45u);
  EXPECT_EQ(templates, (std::set<std::string>{"chatml", "deepseek", "deepseek_r1", "deepseek_v2_5", "default", "gemma",
                                             "gemma3_text", "glm4", "internlm2", "llama", "llama3", "phi3", "phi4", "qwen", "qwen2_5",
                                             "qwen3"}));
  EXPECT_EQ(rules, (std::set<std::string>{"all", "default", "last_round", "all+ignore_empty_think",
                                          "default+ignore_empty_think", "last_round+ignore_empty_think"}));
  EXPECT_EQ(modes, (std::set<std::string>{"infer", "train"}));
}

}  // namespace
}  // namespace swift::templates
