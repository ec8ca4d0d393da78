// Roles and the JSON form of a conversation (ms-swift's `messages` column, OpenAI's chat messages).
#include "swift/template/message.h"

#include <nlohmann/json.hpp>

#include "swift/core/error.h"

namespace swift::templates {

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "?";
}

std::optional<Role> parse_role(std::string_view name) {
  if (name == "system") return Role::kSystem;
  if (name == "user") return Role::kUser;
  if (name == "assistant") return Role::kAssistant;
  if (name == "tool" || name == "tool_response") return Role::kTool;
  return std::nullopt;
}

namespace {

// A call's arguments as JSON text: a string as written, anything else as its JSON.
std::string arguments_text(const nlohmann::json& arguments) {
  if (arguments.is_string()) return arguments.get<std::string>();
  return arguments.is_null() ? "{}" : arguments.dump();
}

}  // namespace

ToolCall tool_call_from_json(const nlohmann::json& raw, const std::string& where) {
  nlohmann::json call = raw;
  if (call.is_string()) call = nlohmann::json::parse(call.get<std::string>(), nullptr, false);
  if (call.is_object() && call.contains("function") && call["function"].is_object()) call = call["function"];
  SWIFT_CHECK(call.is_object() && call.contains("name") && call["name"].is_string(), DataError,
              where + " is not a tool call with a \"name\"",
              "write {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}");
  const auto arguments = call.contains("arguments") ? call["arguments"] : call.contains("parameters") ? call["parameters"]
                                                                                                       : nlohmann::json();
  return ToolCall{call["name"].get<std::string>(), arguments_text(arguments)};
}

Conversation conversation_from_json(const nlohmann::json& messages) {
  SWIFT_CHECK(messages.is_array(), DataError,
              "messages must be a JSON array of {\"role\", \"content\"} objects, got " +
                  std::string(messages.type_name()),
              "write e.g. [{\"role\": \"user\", \"content\": \"Hi\"}, "
              "{\"role\": \"assistant\", \"content\": \"Hello\"}]");
  Conversation out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    SWIFT_CHECK(m.is_object(), DataError, where + " is not an object", "each message is {\"role\", \"content\"}");
    auto role_it = m.find("role");
    SWIFT_CHECK(role_it != m.end() && role_it->is_string(), DataError, where + " has no string \"role\"",
                "roles are system, user, assistant and tool");
    if (role_it->get<std::string>() == "tool_call") {  // ms-swift's form: the call joins the assistant message before it
      const ToolCall call = tool_call_from_json(m.value("content", nlohmann::json()), where + ".content");
      if (!out.empty() && out.back().role == Role::kAssistant) {
        out.back().tool_calls.push_back(call);
      } else {
        Message msg;
        msg.role = Role::kAssistant;
        msg.tool_calls.push_back(call);
        if (m.contains("loss") && m["loss"].is_boolean()) msg.loss = m["loss"].get<bool>();
        out.push_back(std::move(msg));
      }
      continue;
    }
    auto role = parse_role(role_it->get<std::string>());
    SWIFT_CHECK(role.has_value(), DataError, where + " has unknown role '" + role_it->get<std::string>() + "'",
                "roles are system, user, assistant and tool");
    Message msg;
    msg.role = *role;
    auto content = m.find("content");
    if (content != m.end() && !content->is_null()) {
      // ms-swift writes non-string tool results (objects) as their JSON text.
      if (content->is_string()) {
        msg.content = content->get<std::string>();
      } else if (*role == Role::kTool) {
        msg.content = content->dump();
      } else {
        throw DataError(where + ".content is " + std::string(content->type_name()) + ", expected a string",
                        "multimodal content lists are not supported yet; give the text as a string");
      }
    }
    auto loss = m.find("loss");
    if (loss != m.end() && !loss->is_null()) {
      SWIFT_CHECK(loss->is_boolean(), DataError, where + ".loss must be true, false or null",
                  "loss switches the loss of one assistant reply on or off");
      msg.loss = loss->get<bool>();
    }
    auto reasoning = m.find("reasoning_content");
    if (reasoning != m.end() && !reasoning->is_null()) {
      SWIFT_CHECK(reasoning->is_string(), DataError, where + ".reasoning_content must be a string", "");
      msg.reasoning_content = reasoning->get<std::string>();
    }
    auto calls = m.find("tool_calls");
    if (*role == Role::kAssistant && calls != m.end() && !calls->is_null()) {
      SWIFT_CHECK(calls->is_array(), DataError, where + ".tool_calls must be a list", "OpenAI's [{\"function\": {...}}]");
      for (size_t k = 0; k < calls->size(); ++k)
        msg.tool_calls.push_back(tool_call_from_json((*calls)[k], where + ".tool_calls[" + std::to_string(k) + "]"));
    }
    out.push_back(std::move(msg));
  }
  return out;
}

nlohmann::json conversation_to_json(const Conversation& messages) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : messages) {
    nlohmann::json j = {{"role", role_name(m.role)}, {"content", m.content}};
    if (m.loss) j["loss"] = *m.loss;
    if (m.reasoning_content) j["reasoning_content"] = *m.reasoning_content;
    for (const auto& call : m.tool_calls)
      j["tool_calls"].push_back({{"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace swift::templates
