// Request parsing and validation for the OpenAI routes: every field's type and range, with the field named in
// the error's "param", as OpenAI and vLLM answer.
#include "swift/serve/openai_protocol.h"

#include <cmath>

#include "swift/core/error.h"
#include "swift/template/agent_template.h"

using nlohmann::json;

namespace swift::serve {

json error_json(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param, "invalid_value");
}

json parse_body(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // parse errors, and numbers beyond a double (1e999: out_of_range)
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
  return j;
}

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

double number(const json& j, const char* key) {
  if (!j[key].is_number()) bad(key, std::string("'") + key + "' must be a number, got " + j[key].dump());
  return j[key].get<double>();
}

int64_t integer(const json& j, const char* key) {
  const auto& v = j[key];
  if (v.is_number_integer() || v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_float() && std::fabs(v.get<double>()) < 9e15 && v.get<double>() == std::floor(v.get<double>()))
    return static_cast<int64_t>(v.get<double>());
  bad(key, std::string("'") + key + "' must be an integer, got " + v.dump());
}

bool boolean(const json& j, const char* key) {
  if (!j[key].is_boolean()) bad(key, std::string("'") + key + "' must be true or false, got " + j[key].dump());
  return j[key].get<bool>();
}

std::string model_name(const json& j) {
  if (!present(j, "model")) return "";
  if (!j["model"].is_string()) bad("model", "'model' must be a string");
  return j["model"].get<std::string>();
}

SamplingFields sampling_fields(const json& j, const ProtocolLimits& limits) {
  SamplingFields s;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!present(j, key)) continue;
    s.max_tokens = integer(j, key);
    if (*s.max_tokens < 1) bad(key, std::string("'") + key + "' must be at least 1, got " + std::to_string(*s.max_tokens));
  }
  if (present(j, "temperature")) {
    s.temperature = number(j, "temperature");
    if (*s.temperature < 0) bad("temperature", "'temperature' must be >= 0 (0 is greedy)");
  }
  if (present(j, "top_p")) {
    s.top_p = number(j, "top_p");
    if (!(*s.top_p > 0 && *s.top_p <= 1)) bad("top_p", "'top_p' must be in (0, 1]");
  }
  if (present(j, "top_k")) {
    s.top_k = integer(j, "top_k");
    if (*s.top_k < -1) bad("top_k", "'top_k' must be -1 or 0 (off) or a positive count");
    if (*s.top_k < 0) s.top_k = 0;
  }
  if (present(j, "min_p")) {
    s.min_p = number(j, "min_p");
    if (!(*s.min_p >= 0 && *s.min_p <= 1)) bad("min_p", "'min_p' must be in [0, 1]");
  }
  if (present(j, "repetition_penalty")) {
    s.repetition_penalty = number(j, "repetition_penalty");
    if (!(*s.repetition_penalty > 0)) bad("repetition_penalty", "'repetition_penalty' must be > 0 (1 is off)");
  }
  if (present(j, "seed")) s.seed = integer(j, "seed");
  if (present(j, "stop")) {
    const auto& v = j["stop"];
    if (v.is_string()) {
      s.stop.push_back(v.get<std::string>());
    } else if (v.is_array()) {
      for (const auto& w : v) {
        if (!w.is_string()) bad("stop", "'stop' must be a string or a list of strings");
        s.stop.push_back(w.get<std::string>());
      }
    } else {
      bad("stop", "'stop' must be a string or a list of strings");
    }
    // Every generated token is checked against every stop string: bound the work one request can ask for.
    if (s.stop.size() > 16) bad("stop", "'stop' takes at most 16 strings");
    for (const auto& w : s.stop) {
      if (w.empty()) bad("stop", "'stop' strings must not be empty");
      if (w.size() > 512) bad("stop", "'stop' strings must be at most 512 bytes");
    }
  }
  if (present(j, "stop_token_ids")) {
    if (!j["stop_token_ids"].is_array()) bad("stop_token_ids", "'stop_token_ids' must be a list of token ids");
    for (const auto& t : j["stop_token_ids"]) {
      if (!t.is_number_integer()) bad("stop_token_ids", "'stop_token_ids' must be a list of token ids");
      s.stop_token_ids.push_back(t.get<int64_t>());
    }
  }
  if (present(j, "n")) {
    s.n = integer(j, "n");
    if (s.n < 1 || s.n > limits.max_n) bad("n", "'n' must be 1.." + std::to_string(limits.max_n));
  }
  if (present(j, "stream")) s.stream = boolean(j, "stream");
  if (present(j, "stream_options")) {
    const auto& o = j["stream_options"];
    if (!o.is_object()) bad("stream_options", "'stream_options' must be an object");
    if (present(o, "include_usage")) s.include_usage = boolean(o, "include_usage");
  }
  if (present(j, "prompt_logprobs")) {
    s.prompt_logprobs = integer(j, "prompt_logprobs");
    if (s.prompt_logprobs < 0 || s.prompt_logprobs > limits.max_logprobs)
      bad("prompt_logprobs", "'prompt_logprobs' must be 0.." + std::to_string(limits.max_logprobs) + " (--max_logprobs)");
  }
  if (present(j, "return_details")) s.return_details = boolean(j, "return_details");
  return s;
}

// A message's content: a string, or a list of {"type": "text", "text": ...} parts joined.
std::string message_content(const json& m, size_t i) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  if (!m.contains("content") || m["content"].is_null()) return "";
  const auto& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad(param, "'" + param + "' must be a string or a list of text parts");
  std::string text;
  for (const auto& part : c) {
    if (!part.is_object() || !part.contains("type") || part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string())
      bad(param, "'" + param + "': only {\"type\": \"text\", \"text\": ...} parts are supported");
    text += part["text"].get<std::string>();
  }
  return text;
}

templates::Conversation parse_messages(const json& j) {
  if (!present(j, "messages")) throw ApiError(400, "'messages' is required", "messages", "missing_required_parameter");
  const auto& list = j["messages"];
  if (!list.is_array() || list.empty()) bad("messages", "'messages' must be a non-empty list of messages");
  templates::Conversation out;
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& m = list[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      bad(where + ".role", "'" + where + "' must be an object with a string 'role'");
    std::string role_text = m["role"].get<std::string>();
    if (role_text == "developer") role_text = "system";  // OpenAI's newer name for the system role
    const auto role = templates::parse_role(role_text);
    if (!role) bad(where + ".role", "'" + where + ".role' must be system, user, assistant or tool, got '" + role_text + "'");
    templates::Message msg;
    msg.role = *role;
    msg.content = message_content(m, i);
    if (*role == templates::Role::kAssistant && present(m, "tool_calls")) {
      const std::string param = where + ".tool_calls";
      if (!m["tool_calls"].is_array()) bad(param, "'" + param + "' must be a list of tool calls");
      for (size_t k = 0; k < m["tool_calls"].size(); ++k) {
        const std::string at = param + "[" + std::to_string(k) + "]";
        try {
          msg.tool_calls.push_back(templates::tool_call_from_json(m["tool_calls"][k], at));
        } catch (const DataError& e) {
          bad(at, e.message());
        }
      }
    }
    if (present(m, "reasoning_content") && m["reasoning_content"].is_string())
      msg.reasoning_content = m["reasoning_content"].get<std::string>();
    out.push_back(std::move(msg));
  }
  return out;
}

std::vector<int64_t> token_list(const json& v, const std::string& param) {
  std::vector<int64_t> ids;
  for (const auto& t : v) {
    if (!t.is_number_integer() && !t.is_number_unsigned()) bad(param, "'" + param + "' token ids must be integers");
    ids.push_back(t.get<int64_t>());
  }
  return ids;
}

std::vector<PromptInput> parse_prompts(const json& j) {
  if (!present(j, "prompt")) throw ApiError(400, "'prompt' is required", "prompt", "missing_required_parameter");
  const auto& p = j["prompt"];
  const std::string shape = "'prompt' must be a string, a list of strings, a list of token ids, or a list of such lists";
  std::vector<PromptInput> out;
  if (p.is_string()) {
    out.push_back({p.get<std::string>(), {}});
  } else if (p.is_array() && !p.empty()) {
    if (p[0].is_string()) {
      for (const auto& s : p) {
        if (!s.is_string()) bad("prompt", shape);
        out.push_back({s.get<std::string>(), {}});
      }
    } else if (p[0].is_number()) {
      out.push_back({std::nullopt, token_list(p, "prompt")});
    } else if (p[0].is_array()) {
      for (const auto& ids : p) {
        if (!ids.is_array() || ids.empty()) bad("prompt", shape);
        out.push_back({std::nullopt, token_list(ids, "prompt")});
      }
    } else {
      bad("prompt", shape);
    }
  } else {
    bad("prompt", shape);
  }
  for (const auto& in : out)
    if (in.text ? in.text->empty() : in.token_ids.empty()) bad("prompt", "'prompt' must not be empty");
  return out;
}

}  // namespace

namespace {

// `tools` and `tool_choice` (ms-swift's ChatCompletionRequestMixin): read again from the body in its own key order,
// which shows in the prompt.
std::vector<nlohmann::ordered_json> request_tools(const std::string& body, const json& j) {
  if (!present(j, "tools")) return {};
  if (!j["tools"].is_array()) bad("tools", "'tools' must be a list of {\"type\": \"function\", \"function\": {...}}");
  std::vector<nlohmann::ordered_json> tools;
  try {
    tools = templates::parse_tools(nlohmann::ordered_json::parse(body)["tools"]);
  } catch (const UserError& e) {
    bad("tools", e.message());
  }
  for (const auto& t : tools)
    if (!t.contains("function") || !t["function"].is_object() || !t["function"].contains("name"))
      bad("tools", "each tool needs function.name");
  if (!present(j, "tool_choice")) return tools;
  const json& choice = j["tool_choice"];
  if (choice.is_string()) {
    const std::string c = choice.get<std::string>();
    if (c == "none") return {};
    if (c == "auto" || c == "required") return tools;
    bad("tool_choice", "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  if (!choice.is_object() || !choice.contains("function") || !choice["function"].is_object() ||
      !choice["function"].contains("name") || !choice["function"]["name"].is_string())
    bad("tool_choice", "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  const std::string name = choice["function"]["name"].get<std::string>();
  for (const auto& t : tools)
    if (t["function"]["name"] == name) return {t};
  bad("tool_choice", "tool_choice names '" + name + "', which is not among 'tools'");
  return {};
}

}  // namespace

ChatRequest parse_chat_request(const std::string& body, const ProtocolLimits& limits) {
  const json j = parse_body(body);
  ChatRequest r;
  r.model = model_name(j);
  r.messages = parse_messages(j);
  r.sampling = sampling_fields(j, limits);
  r.tools = request_tools(body, j);
  if (present(j, "logprobs")) r.logprobs = boolean(j, "logprobs");
  if (present(j, "top_logprobs")) {
    r.top_logprobs = integer(j, "top_logprobs");
    if (r.top_logprobs < 0 || r.top_logprobs > limits.max_logprobs)
      bad("top_logprobs", "'top_logprobs' must be 0.." + std::to_string(limits.max_logprobs) + " (--max_logprobs)");
    if (r.top_logprobs > 0 && !r.logprobs) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  // vLLM's switches (its default add_generation_prompt true is taken as "not given": a request that sets only
  // continue_final_message means it).
  const std::optional<bool> add_generation_prompt =
      present(j, "add_generation_prompt") ? std::optional<bool>(boolean(j, "add_generation_prompt")) : std::nullopt;
  const bool continue_final = present(j, "continue_final_message") && boolean(j, "continue_final_message");
  if (continue_final) {
    if (add_generation_prompt.value_or(false))
      bad("continue_final_message", "'continue_final_message' and 'add_generation_prompt' cannot both be true");
    if (r.messages.back().role != templates::Role::kAssistant)
      bad("continue_final_message", "'continue_final_message' needs the last message to be the assistant's");
    r.prompt_end = templates::PromptEnd::kContinue;
  } else if (add_generation_prompt) {
    r.prompt_end = *add_generation_prompt ? templates::PromptEnd::kGenerationPrompt : templates::PromptEnd::kNone;
  }
  if (present(j, "chat_template_kwargs")) {
    const auto& k = j["chat_template_kwargs"];
    if (!k.is_object()) bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    if (present(k, "enable_thinking")) {
      if (!k["enable_thinking"].is_boolean())
        bad("chat_template_kwargs.enable_thinking", "'enable_thinking' must be true or false");
      r.enable_thinking = k["enable_thinking"].get<bool>();
    }
  }
  return r;
}

CompletionRequest parse_completion_request(const std::string& body, const ProtocolLimits& limits) {
  const json j = parse_body(body);
  CompletionRequest r;
  r.model = model_name(j);
  r.prompts = parse_prompts(j);
  r.sampling = sampling_fields(j, limits);
  if (present(j, "logprobs")) {
    const auto& v = j["logprobs"];
    if (v.is_boolean()) {  // some clients send the chat form
      if (v.get<bool>()) r.logprobs = 0;
    } else {
      r.logprobs = integer(j, "logprobs");
      if (*r.logprobs < 0 || *r.logprobs > limits.max_logprobs)
        bad("logprobs", "'logprobs' must be 0.." + std::to_string(limits.max_logprobs) + " (--max_logprobs)");
    }
  }
  if (present(j, "echo")) r.echo = boolean(j, "echo");
  if (r.sampling.stream && r.echo && r.logprobs)
    bad("echo", "'echo' with 'logprobs' is not supported when streaming");
  return r;
}

}  // namespace swift::serve
