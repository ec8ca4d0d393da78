// ms-swift's agent templates (swift/agent_template): how a chat template describes the `tools` to the model, writes
// the assistant's tool calls in training data, and how deploy finds the calls in a generated reply.
//   hermes   (Qwen's default): the tools as JSON lines in <tools></tools> after the system prompt; each call as
//            <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>; results in <tool_response> blocks
//   llama3   (Llama 3's default): the tools (JSON, indent 4) and an instruction before the first user message;
//            each call as {"name": ..., "parameters": {...}}; results in ipython-style tool turns
//   react_en: a ReAct system prompt; calls as "Action: name\nAction Input: {...}\nObservation:"
//   glm4     (GLM-4-0414's default): the tools (JSON, indent 4) under "# 可用工具" in place of the system prompt; each
//            call as "name\n{arguments}" (Python's str of the dict), calls joined by <|assistant|> and closed by
//            <|observation|>; results after "\n", joined by "<|observation|>\n", closed by <|assistant|>\n
// The JSON inside prompts is written as Python's json.dumps writes it (", " and ": " separators, non-ASCII kept),
// so the token ids equal ms-swift's.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "swift/template/message.h"

namespace swift::templates {

enum class AgentTemplate { kHermes, kLlama3, kReactEn, kGlm4 };

// "hermes" | "llama3" | "react_en" | "glm4"; UsageError naming --agent_template otherwise.
AgentTemplate parse_agent_template(std::string_view name);
std::string_view agent_template_name(AgentTemplate agent);

// Python's json.dumps(value, ensure_ascii=False) (indent < 0) or with indent=N.
std::string python_json_dumps(const nlohmann::ordered_json& value, int indent = -1);

// The `tools` column / request field: a list of tools (objects, or JSON texts of objects), or one JSON text of such a
// list. Each is returned as ms-swift's wrap_tool makes it ({"type": "function", "function": {...}}). DataError for a
// tool that is not an object.
// The key order of the schemas is kept as given (it shows in the prompt): pass JSON parsed as ordered_json, or text.
std::vector<nlohmann::ordered_json> parse_tools(const nlohmann::ordered_json& tools);

// A dataset row's `tools` column: none when absent or null; a JSON-text column keeps the key order it was written
// in (it shows in the prompt), one read as JSON objects has lost it (nlohmann's objects sort their keys).
std::vector<nlohmann::ordered_json> row_tools(const nlohmann::json& row);

// The system prompt with the tools described (hermes, react_en; glm4: the description alone, the system prompt
// dropped as ms-swift drops it), or `system` unchanged with the description put before the first user message's text
// (llama3). `system`: the system prompt in force ("" for none).
std::string format_tools(AgentTemplate agent, const std::vector<nlohmann::ordered_json>& tools, const std::string& system,
                         std::string* first_user_message);

// The assistant text of consecutive tool calls.
std::string format_tool_calls(AgentTemplate agent, const std::vector<ToolCall>& calls);

// The tool calls in a generated reply (ms-swift's get_toolcall: the agent's own format first, then ReAct's
// "Action:/Action Input:"); empty when there are none. Arguments come back as JSON text (json.dumps of an object, or
// the text as written when it is not JSON).
std::vector<ToolCall> parse_tool_calls(AgentTemplate agent, const std::string& reply);

}  // namespace swift::templates
