// The conversation a chat template renders: ms-swift's `messages` (system | user | assistant | tool), with the
// per-message `loss` switch and Qwen3's `reasoning_content`.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swift::templates {

enum class Role { kSystem, kUser, kAssistant, kTool };

enum class AgentTemplate;  // how tools and tool calls are written (agent_template.h)

// A function call an assistant message makes (OpenAI's tool_calls, ms-swift's "tool_call" messages).
struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text (usually an object), as the data or the model wrote it
};

struct Message {
  Role role = Role::kUser;
  std::string content;
  // Assistant messages only: true/false forces loss on/off for this reply whatever the loss rule says.
  // Default: unset (the loss rule decides).
  std::optional<bool> loss;
  // Assistant messages only: the thinking, as in OpenAI-style/Qwen3 messages. Thinking templates (qwen3) render it
  // as "<think>\n...\n</think>\n\n" before the content; other templates drop it. Default: unset.
  std::optional<std::string> reasoning_content;
  // Assistant messages only: the calls it makes, written after its content by the agent template. Default: none.
  std::vector<ToolCall> tool_calls;
};

// A conversation: an optional system message first, then user/assistant/tool turns. Consecutive user messages
// are joined, consecutive assistant messages become one reply (each part keeping its own `loss`), consecutive
// tool messages one tool turn.
using Conversation = std::vector<Message>;

std::string_view role_name(Role role);
// "system" | "user" | "assistant" | "tool" ("tool_response" is read as "tool", as ms-swift does); nullopt else.
std::optional<Role> parse_role(std::string_view name);

// Reads a JSON array of {"role", "content", "loss"?, "reasoning_content"?, "tool_calls"?} objects (ms-swift's
// `messages` column). A null content reads as "". Tool calls come as OpenAI's assistant `tool_calls`
// ([{"function": {"name", "arguments"}}], arguments an object or its JSON text) or as ms-swift's "tool_call"
// messages (content {"name", "arguments"} or its JSON text), which join the assistant message before them.
// DataError saying which message and field is wrong.
Conversation conversation_from_json(const nlohmann::json& messages);
nlohmann::json conversation_to_json(const Conversation& messages);

// One tool call: OpenAI's {"function": {"name", "arguments"}} (or the function itself), or ms-swift's tool_call
// content {"name", "arguments" | "parameters"} (an object or its JSON text). DataError naming `where` otherwise.
ToolCall tool_call_from_json(const nlohmann::json& call, const std::string& where);

// How an inference prompt ends (vLLM's and transformers' add_generation_prompt / continue_final_message).
enum class PromptEnd {
  kAuto,              // ms-swift: a final assistant message is continued, else the next reply is opened
  kGenerationPrompt,  // the next assistant reply opened (a final assistant message closed first)
  kContinue,          // the final assistant message left open, without its end of turn, for the model to go on
  kNone,              // neither: every message closed, nothing opened
};

}  // namespace swift::templates
