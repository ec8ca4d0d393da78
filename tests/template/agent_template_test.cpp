// ms-swift's agent templates: the JSON written as Python writes it, tool calls found in generated replies as
// ms-swift's get_toolcall finds them (each agent's own format, then ReAct's), the tools column's shapes. The
// prompts themselves are compared with ms-swift's token ids in msswift_parity_test.cpp (*_tools_*, *react_en*).
#include <gtest/gtest.h>

#include "swift/core/error.h"
#include "swift/template/agent_template.h"

namespace swift::templates {
namespace {

using nlohmann::ordered_json;

TEST(AgentTemplate, PythonJsonDumps) {
  const auto v = ordered_json::parse(R"({"b": [1, 2.5, true, null], "a": {"x": "é\n\"q\""}, "e": {}, "l": []})");
  EXPECT_EQ(python_json_dumps(v), "{\"b\": [1, 2.5, true, null], \"a\": {\"x\": \"é\\n\\\"q\\\"\"}, \"e\": {}, \"l\": []}");
  EXPECT_EQ(python_json_dumps(ordered_json::parse(R"({"a": [1, {"b": 2}], "c": {}})"), 4),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": 2\n        }\n    ],\n    \"c\": {}\n}");
}

TEST(AgentTemplate, FindsToolCallsInReplies) {
  auto calls = parse_tool_calls(AgentTemplate::kHermes,
                                "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n"
                                "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, "{\"city\": \"Paris\", \"unit\": \"c\"}");  // json.dumps, key order kept
  EXPECT_EQ(calls[1].arguments, "{}");
  calls = parse_tool_calls(AgentTemplate::kLlama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eom_id|>");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, "{\"city\": \"Paris\"}");
  // GLM-4: "name\n{...}" per <|assistant|>-separated piece, the arguments as written (nested objects whole).
  calls = parse_tool_calls(AgentTemplate::kGlm4,
                           "get_weather\n{\"city\": \"Paris\"}<|assistant|>get_time\n{\"city\": \"Rome\", \"x\": {\"a\": 1}}<|observation|>");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(calls[1].name, "get_time");
  EXPECT_EQ(calls[1].arguments, "{\"city\": \"Rome\", \"x\": {\"a\": 1}}");  // as ms-swift 4.6's get_toolcall
  // ReAct, and ReAct as every agent's fallback.
  for (auto agent : {AgentTemplate::kReactEn, AgentTemplate::kHermes, AgentTemplate::kLlama3, AgentTemplate::kGlm4}) {
    calls = parse_tool_calls(agent, "Thought: look it up\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}\nObservation:");
    ASSERT_EQ(calls.size(), 1u) << agent_template_name(agent);
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments, "{\"city\": \"Paris\"}");
  }
  EXPECT_TRUE(parse_tool_calls(AgentTemplate::kHermes, "It is sunny. <tool_call>not json</tool_call>").empty());
  EXPECT_TRUE(parse_tool_calls(AgentTemplate::kHermes, "No calls here.").empty());
}

TEST(AgentTemplate, WritesToolCallsAsMsSwift) {
  const std::vector<ToolCall> calls = {{"get_weather", "{\"city\": \"Paris\"}"}, {"get_time", "{\"city\": \"Nice\"}"}};
  EXPECT_EQ(format_tool_calls(AgentTemplate::kHermes, calls),
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Nice\"}}\n</tool_call>");
  EXPECT_EQ(format_tool_calls(AgentTemplate::kLlama3, {calls[0]}), "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}");
  // ms-swift writes a ReAct call's arguments as Python's str() of the dict.
  EXPECT_EQ(format_tool_calls(AgentTemplate::kReactEn, {{"f", "{\"s\": \"it's\", \"b\": true, \"n\": null}"}}),
            "Action: f\nAction Input: {'s': \"it's\", 'b': True, 'n': None}\nObservation:");
  // GLM-4: the same str() of the dict after the name, calls joined by <|assistant|>, closed by <|observation|>.
  EXPECT_EQ(format_tool_calls(AgentTemplate::kGlm4, {calls[0], {"get_time", "{}"}}),
            "get_weather\n{'city': 'Paris'}<|assistant|>get_time\n{}<|observation|>");
  EXPECT_EQ(parse_agent_template("glm4"), AgentTemplate::kGlm4);
}

TEST(AgentTemplate, ToolsColumnShapes) {
  const auto wrapped = parse_tools(ordered_json::parse(R"([{"name": "f", "description": "d"}])"));
  ASSERT_EQ(wrapped.size(), 1u);
  EXPECT_EQ(python_json_dumps(wrapped[0]), "{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\"}}");
  EXPECT_EQ(parse_tools(ordered_json("[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]")).size(), 1u);  // JSON text
  EXPECT_EQ(parse_tools(ordered_json::array({"{\"name\": \"g\"}"})).size(), 1u);  // each tool as text
  EXPECT_TRUE(parse_tools(ordered_json()).empty());
  EXPECT_THROW(parse_tools(ordered_json::parse("[1]")), DataError);
  EXPECT_THROW(parse_tools(ordered_json("not json")), DataError);
  EXPECT_THROW(parse_agent_template("glm4_5"), UsageError);
  EXPECT_EQ(parse_agent_template("react_en"), AgentTemplate::kReactEn);
}

}  // namespace
}  // namespace swift::templates
