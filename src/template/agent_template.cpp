// ms-swift's agent templates (see agent_template.h). The texts are ms-swift 4.6's (swift/agent_template/hermes.py,
// llama.py, react.py, glm4.py, base.py), quirks included: hermes puts "\n\n" before "# Tools" even without a system
// prompt, react_en and glm4 write a call's arguments as Python's str() of the dict, glm4 drops the system prompt.
#include "swift/template/agent_template.h"

#include <regex>

#include "swift/core/error.h"

namespace swift::templates {

using nlohmann::ordered_json;

AgentTemplate parse_agent_template(std::string_view name) {
  if (name == "hermes") return AgentTemplate::kHermes;
  if (name == "llama3") return AgentTemplate::kLlama3;
  if (name == "react_en") return AgentTemplate::kReactEn;
  if (name == "glm4") return AgentTemplate::kGlm4;
  throw UsageError("--agent_template " + std::string(name) + " is not an agent template swift has",
                   "use hermes (Qwen's), llama3, react_en or glm4");
}

std::string_view agent_template_name(AgentTemplate agent) {
  switch (agent) {
    case AgentTemplate::kHermes: return "hermes";
    case AgentTemplate::kLlama3: return "llama3";
    case AgentTemplate::kReactEn: return "react_en";
    case AgentTemplate::kGlm4: return "glm4";
  }
  return "hermes";
}

namespace {

void dumps(const ordered_json& v, int indent, int level, std::string& out) {
  const auto newline = [&](int depth) {
    out += '\n';
    out.append(static_cast<size_t>(indent * depth), ' ');
  };
  if (v.is_object() || v.is_array()) {
    const bool object = v.is_object();
    if (v.empty()) {
      out += object ? "{}" : "[]";
      return;
    }
    out += object ? '{' : '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += indent < 0 ? ", " : ",";
      first = false;
      if (indent >= 0) newline(level + 1);
      if (object) out += ordered_json(it.key()).dump(-1, ' ', false, ordered_json::error_handler_t::replace) + ": ";
      dumps(it.value(), indent, level + 1, out);
    }
    if (indent >= 0) newline(level);
    out += object ? '}' : ']';
    return;
  }
  out += v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// Python's repr() of a string: single quotes unless the text has one and no double quote.
std::string python_repr(const std::string& s) {
  const char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : s) {
    if (c == '\\' || c == quote) out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out + quote;
}

// Python's str() of a parsed JSON value (dict, list, str, bool, None, numbers).
std::string python_str(const ordered_json& v, bool top = true) {
  if (v.is_string()) return top ? v.get<std::string>() : python_repr(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  if (v.is_object() || v.is_array()) {
    std::string out(1, v.is_object() ? '{' : '[');
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      if (v.is_object()) out += python_repr(it.key()) + ": ";
      out += python_str(it.value(), false);
    }
    return out + (v.is_object() ? '}' : ']');
  }
  return v.dump();
}

// ms-swift's _parse_json: JSON text parsed (a value that is not text is itself); nullopt when it does not parse.
std::optional<ordered_json> parse_json_text(const std::string& text) {
  ordered_json v = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return std::nullopt;
  return v;
}

// A call's arguments as an object where they parse, else the text.
ordered_json arguments_value(const ToolCall& call) {
  auto parsed = parse_json_text(call.arguments);
  return parsed ? *parsed : ordered_json(call.arguments);
}

std::string strip(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n\r") - b + 1);
}

// ms-swift's Function: arguments that are not text are written with json.dumps; both stripped.
ToolCall make_call(const std::string& name, const ordered_json& arguments) {
  return ToolCall{strip(name), strip(arguments.is_string() ? arguments.get<std::string>() : python_json_dumps(arguments))};
}

// ReAct's "Action: name" / "Action Input: args" pairs (ms-swift's _split_action_action_input).
std::vector<ToolCall> parse_react(const std::string& reply) {
  static const std::regex kKeyword(R"(Action Input:|Action:|Observation:)");
  std::vector<ToolCall> calls;
  std::optional<std::string> action;
  std::string key;
  size_t from = 0;
  auto take = [&](const std::string& content) {
    if (!action && key == "Action:") action = content;
    else if (action && key == "Action Input:") {
      calls.push_back(ToolCall{strip(*action), strip(content)});
      action.reset();
    }
  };
  for (std::sregex_iterator it(reply.begin(), reply.end(), kKeyword), end; it != end; ++it) {
    take(reply.substr(from, static_cast<size_t>(it->position()) - from));
    key = it->str();
    from = static_cast<size_t>(it->position() + it->length());
  }
  take(reply.substr(from));
  return calls;
}

}  // namespace

std::string python_json_dumps(const ordered_json& value, int indent) {
  std::string out;
  dumps(value, indent, 0, out);
  return out;
}

std::vector<ordered_json> parse_tools(const ordered_json& tools_in) {
  ordered_json tools = tools_in;
  if (tools.is_string()) {
    auto parsed = parse_json_text(tools.get<std::string>());
    SWIFT_CHECK(parsed.has_value(), DataError, "\"tools\" is a string that is not JSON",
                "give a list of tool objects ({\"type\": \"function\", \"function\": {...}})");
    tools = *parsed;
  }
  if (tools.is_null()) return {};
  if (!tools.is_array()) tools = ordered_json::array({tools});
  std::vector<ordered_json> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    ordered_json tool = tools[i];
    if (tool.is_string()) tool = parse_json_text(tool.get<std::string>()).value_or(ordered_json());
    SWIFT_CHECK(tool.is_object(), DataError, "tools[" + std::to_string(i) + "] is not a JSON object",
                "each tool is {\"type\": \"function\", \"function\": {\"name\", \"description\", \"parameters\"}}");
    if (!tool.contains("type") && !tool.contains("function")) tool = ordered_json{{"type", "function"}, {"function", tool}};
    out.push_back(std::move(tool));
  }
  return out;
}

std::vector<ordered_json> row_tools(const nlohmann::json& row) {
  const auto it = row.find("tools");
  if (it == row.end() || it->is_null()) return {};
  return parse_tools(it->is_string() ? ordered_json(it->get<std::string>()) : ordered_json::parse(it->dump()));
}

std::string format_tools(AgentTemplate agent, const std::vector<ordered_json>& tools, const std::string& system,
                         std::string* first_user_message) {
  switch (agent) {
    case AgentTemplate::kHermes: {
      std::string descs;
      for (const auto& tool : tools) descs += (descs.empty() ? "" : "\n") + python_json_dumps(tool);
      return system +
             "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
             "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
             descs +
             "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
             "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
             "<args-json-object>}\n</tool_call>";
    }
    case AgentTemplate::kLlama3: {
      SWIFT_CHECK(first_user_message != nullptr, DataError, "llama3's tool description goes before the first user "
                  "message, and the conversation has none", "start the conversation with a user message");
      std::string descs;
      for (const auto& tool : tools) descs += (descs.empty() ? "" : "\n\n") + python_json_dumps(tool, 4);
      *first_user_message =
          "Given the following functions, please respond with a JSON for a function call with its proper arguments "
          "that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": "
          "dictionary of argument name and its value}. Do not use variables.\n\n" +
          descs + "\n\n" + *first_user_message;
      return system;
    }
    case AgentTemplate::kGlm4: {  // ms-swift's GLM4AgentTemplate._format_tools: the system prompt is not kept
      std::string descs;
      for (const auto& wrapped : tools) {
        const ordered_json& tool = wrapped.contains("function") && wrapped.contains("type") ? wrapped["function"] : wrapped;
        std::string name;
        for (const char* key : {"name_for_model", "name"})
          if (name.empty() && tool.contains(key) && tool[key].is_string()) name = tool[key].get<std::string>();
        descs += (descs.empty() ? "" : "\n") + std::string("## ") + name + "\n\n" + python_json_dumps(tool, 4) +
                 "\n在调用上述函数时，请使用 Json 格式表示调用的参数。";
      }
      return "# 可用工具\n\n" + descs;
    }
    case AgentTemplate::kReactEn: {
      std::string descs, names;
      for (const auto& wrapped : tools) {
        const ordered_json& tool = wrapped.contains("function") && wrapped.contains("type") ? wrapped["function"] : wrapped;
        auto text = [&](const char* a, const char* b) -> std::string {
          for (const char* k : {a, b})
            if (k && tool.contains(k) && tool[k].is_string() && !tool[k].get<std::string>().empty()) return tool[k].get<std::string>();
          return "";
        };
        const std::string name = text("name_for_model", "name"), human = text("name_for_human", nullptr).empty() ? name : text("name_for_human", nullptr);
        const std::string description = tool.contains("description") ? text("description", nullptr) : text("description_for_model", nullptr);
        SWIFT_CHECK(!name.empty(), DataError, "a tool has no name", "each tool's function needs \"name\" and \"description\"");
        const ordered_json params = tool.contains("parameters") && !tool["parameters"].is_null() ? tool["parameters"] : ordered_json::object();
        const std::string parameters = params.is_string() ? params.get<std::string>() : python_json_dumps(params);
        descs += (descs.empty() ? "" : "\n\n") + name + ": Call this tool to interact with the " + human +
                 " API. What is the " + human + " API useful for? " + description + " Parameters: " + parameters +
                 " Format the arguments as a JSON object.";
        names += (names.empty() ? "" : ",") + name;
      }
      return "Answer the following questions as best you can. You have access to the following tools:\n\n" + descs +
             "\n\nUse the following format:\n\nQuestion: the input question you must answer\nThought: you should "
             "always think about what to do\nAction: the action to take, should be one of [" +
             names +
             "]\nAction Input: the input to the action\nObservation: the result of the action\n... (this "
             "Thought/Action/Action Input/Observation can be repeated zero or more times)\nThought: I now know the "
             "final answer\nFinal Answer: the final answer to the original input question\n\nBegin!\n";
    }
  }
  return system;
}

std::string format_tool_calls(AgentTemplate agent, const std::vector<ToolCall>& calls) {
  std::string out;
  for (const auto& call : calls) {
    const ordered_json arguments = arguments_value(call);
    switch (agent) {
      case AgentTemplate::kHermes:
        out += (out.empty() ? "" : "\n") + std::string("<tool_call>\n") +
               python_json_dumps(ordered_json{{"name", call.name}, {"arguments", arguments}}) + "\n</tool_call>";
        break;
      case AgentTemplate::kLlama3:
        out += (out.empty() ? "" : "\n") + python_json_dumps(ordered_json{{"name", call.name}, {"parameters", arguments}});
        break;
      case AgentTemplate::kReactEn:
        out += "Action: " + call.name + "\nAction Input: " + python_str(arguments) + "\n";
        break;
      case AgentTemplate::kGlm4:
        out += (out.empty() ? "" : "<|assistant|>") + call.name + "\n" + python_str(arguments);
        break;
    }
  }
  if (agent == AgentTemplate::kReactEn) out += "Observation:";
  if (agent == AgentTemplate::kGlm4) out += "<|observation|>";
  return out;
}

std::vector<ToolCall> parse_tool_calls(AgentTemplate agent, const std::string& reply) {
  std::vector<ToolCall> calls;
  if (agent == AgentTemplate::kHermes) {
    static const std::regex kCall(R"(<tool_call>([\s\S]+?)</tool_call>)");
    for (std::sregex_iterator it(reply.begin(), reply.end(), kCall), end; it != end; ++it) {
      auto v = parse_json_text((*it)[1].str());
      if (v && v->is_object() && v->contains("name") && v->contains("arguments") && (*v)["name"].is_string())
        calls.push_back(make_call((*v)["name"].get<std::string>(), (*v)["arguments"]));
    }
  } else if (agent == AgentTemplate::kLlama3) {
    std::string text = reply;
    const std::string eom = "<|eom_id|>";
    if (text.size() >= eom.size() && text.compare(text.size() - eom.size(), eom.size(), eom) == 0) text.resize(text.size() - eom.size());
    static const std::regex kCall(R"(\{[^{]*?"name":[\s\S]*?"parameters":\s*?\{[\s\S]*?\}\s*?\})");
    for (std::sregex_iterator it(text.begin(), text.end(), kCall), end; it != end; ++it) {
      auto v = parse_json_text(it->str());
      if (v && v->is_object() && v->contains("name") && v->contains("parameters") && (*v)["name"].is_string())
        calls.push_back(make_call((*v)["name"].get<std::string>(), (*v)["parameters"]));
    }
  } else if (agent == AgentTemplate::kGlm4) {  // per <|assistant|>-separated piece: "name\n{...}"
    static const std::regex kCall(R"(([^\n`]*?)\n(\{[\s\S]*?\})(?=\w*\n|$))");
    size_t from = 0;
    while (from <= reply.size()) {
      size_t end = reply.find("<|assistant|>", from);
      if (end == std::string::npos) end = reply.size();
      std::string piece = reply.substr(from, end - from);
      for (size_t at; (at = piece.find("<|observation|>")) != std::string::npos;) piece.erase(at, 15);
      std::smatch m;
      if (std::regex_search(piece, m, kCall)) calls.push_back(make_call(m[1].str(), ordered_json(m[2].str())));
      from = end + 13;  // past "<|assistant|>"
    }
  }
  if (calls.empty()) calls = parse_react(reply);  // ms-swift's "compat react_en"
  return calls;
}

}  // namespace swift::templates
