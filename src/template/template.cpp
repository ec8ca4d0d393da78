// Template::render / encode: ms-swift's Template._swift_encode and its loss rules (swift/template/base.py,
// swift/loss_scale/base.py, ms-swift 4.6), re-expressed: the conversation becomes a list of contexts (template
// text, replies, end-of-turn text), each gets loss on/off, adjacent texts with equal loss are joined and
// tokenized separately, and the ids are concatenated.
#include "swift/template/template.h"
#include "swift/template/agent_template.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <utility>

#include "swift/core/error.h"
#include "swift/tokenizer/tokenizer.h"

namespace swift::templates {

LossRule parse_loss_rule(std::string_view name) {
  if (name == "default") return LossRule::kDefault;
  if (name == "last_round") return LossRule::kLastRound;
  if (name == "all") return LossRule::kAll;
  throw UsageError("--loss_scale '" + std::string(name) + "' is not supported",
                   "use default (every assistant reply), last_round (only the last reply) or all (every token), "
                   "each optionally +ignore_empty_think");
}

LossScale parse_loss_scale(std::string_view name) {
  constexpr std::string_view kIgnore = "ignore_empty_think";
  LossScale scale;
  if (name == kIgnore) {
    scale.ignore_empty_think = true;
    return scale;
  }
  const size_t plus = name.find('+');
  if (plus != std::string_view::npos) {
    SWIFT_CHECK(name.substr(plus + 1) == kIgnore, UsageError,
                "--loss_scale '" + std::string(name) + "': '" + std::string(name.substr(plus + 1)) + "' is not supported",
                "the one loss-scale swift adds to a base rule is ignore_empty_think, e.g. default+ignore_empty_think");
    scale.ignore_empty_think = true;
  }
  scale.rule = parse_loss_rule(name.substr(0, plus));
  return scale;
}

std::string loss_scale_name(const LossScale& scale) {
  return std::string(loss_rule_name(scale.rule)) + (scale.ignore_empty_think ? "+ignore_empty_think" : "");
}

std::string_view loss_rule_name(LossRule rule) {
  switch (rule) {
    case LossRule::kDefault: return "default";
    case LossRule::kLastRound: return "last_round";
    case LossRule::kAll: return "all";
  }
  return "?";
}

namespace {

enum class ContextType { kOther, kResponse, kSuffix };

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}
bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The length of the empty think block that opens `reply`, or 0: ms-swift's ignore_empty_think.json patterns
// ("^<think>\s*</think>\s*", "^</think>\s*", "^</mm:think>\s*", Seed's zero-budget block, Gemma's empty channel).
size_t empty_think_length(std::string_view reply) {
  auto spaces_from = [&](size_t at) {
    while (at < reply.size() && is_ascii_space(reply[at])) ++at;
    return at;
  };
  auto opens = [&](std::string_view s) { return reply.substr(0, s.size()) == s; };
  if (opens("<think>")) {
    const size_t close = spaces_from(7);
    return reply.substr(close, 8) == "</think>" ? spaces_from(close + 8) : 0;
  }
  constexpr std::string_view kSeedZeroBudget =
      "<seed:think><seed:cot_budget_reflect>The current thinking budget is 0, so I will directly start answering the "
      "question.</seed:cot_budget_reflect>\n</seed:think>";
  for (std::string_view closed : {std::string_view("</think>"), std::string_view("</mm:think>"), kSeedZeroBudget}) {
    if (opens(closed)) return spaces_from(closed.size());
  }
  constexpr std::string_view kEmptyChannel = "<|channel>thought\n<channel|>";
  return opens(kEmptyChannel) ? kEmptyChannel.size() : 0;
}

// Python's str.strip(chars) for ASCII whitespace or the given characters.
std::string strip(std::string_view s, std::string_view chars = " \t\n\r\f\v", bool left = true, bool right = true) {
  size_t b = 0, e = s.size();
  while (left && b < e && chars.find(s[b]) != std::string_view::npos) ++b;
  while (right && e > b && chars.find(s[e - 1]) != std::string_view::npos) --e;
  return std::string(s.substr(b, e - b));
}

std::string today_date() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%d %b %Y", &tm);
  return buf;
}

// A conversation turn after joining consecutive messages of one role.
struct Turn {
  Role role;
  std::vector<std::string> parts;         // assistant: its replies; tool: its results; user: one text
  std::vector<std::optional<bool>> loss;  // assistant: per part
  bool pending = false;                   // the reply generation will write
};

int last_query_turn(const std::vector<Turn>& turns) {
  for (int i = static_cast<int>(turns.size()) - 1; i >= 0; --i) {
    if (turns[i].role == Role::kUser || turns[i].role == Role::kTool) return i;
  }
  return -1;
}

}  // namespace

struct Template::Context {
  std::string text;
  std::vector<int64_t> ids;  // a token context (BOS/EOS) when non-empty
  ContextType type = ContextType::kOther;
  int round = -1;                 // kResponse: which round
  std::optional<bool> loss;       // kResponse: the message's own switch
  bool has_loss = false;          // decided by the loss rule

  static Context of_text(std::string text, ContextType type) {
    Context c;
    c.text = std::move(text);
    c.type = type;
    return c;
  }
  static Context of_ids(std::vector<int64_t> ids, ContextType type) {
    Context c;
    c.ids = std::move(ids);
    c.type = type;
    return c;
  }
  static Context of_reply(std::string text, int round, std::optional<bool> loss) {
    Context c = of_text(std::move(text), ContextType::kResponse);
    c.round = round;
    c.loss = loss;
    return c;
  }
};

Template::Template(TemplateMeta meta, const tokenizer::Tokenizer& tokenizer, TemplateOptions options)
    : meta_(std::move(meta)), tokenizer_(&tokenizer), options_(std::move(options)) {
  // A template token must be one token of the vocabulary that text containing it is split at: Qwen's byte-level
  // vocabulary spells "<s>" as an ordinary entry, but encodes "<s>" in text as "<s" ">".
  for (const auto& token : meta_.required_tokens) {
    auto id = tokenizer_->token_to_id(token);
    if (!id || tokenizer_->encode(token, false) != std::vector<int64_t>{*id}) {
      missing_token_ = token;
      break;
    }
  }
}

bool Template::default_enable_thinking() const {
  return options_.enable_thinking.value_or(meta_.is_thinking && meta_.non_thinking_prefix.empty());
}

std::optional<std::string> Template::missing_token() const { return missing_token_; }

void Template::check_tokens() const {
  if (auto missing = missing_token()) {
    throw UsageError("the tokenizer has no " + *missing + " token, which chat template '" + meta_.name + "' needs",
                     "pass the model's template with --template (one of: " + template_names_joined() +
                         "), or --use_chat_template false to feed plain text");
  }
  auto needs = [&](const Prompt& p, Piece::Kind kind) {
    return std::any_of(p.begin(), p.end(), [&](const Piece& x) { return x.kind == kind; });
  };
  for (const Prompt* p : {&meta_.prefix, &meta_.system_prefix, &meta_.prompt, &meta_.generation_prompt,
                          &meta_.chat_sep, &meta_.suffix}) {
    SWIFT_CHECK(!needs(*p, Piece::Kind::kEos) || tokenizer_->eos_id(), UsageError,
                "chat template '" + meta_.name + "' ends replies with the tokenizer's EOS token, but the tokenizer "
                "has none (no eos_token in tokenizer_config.json, or it is not in the vocabulary)",
                "set eos_token in tokenizer_config.json, or pick another --template");
    SWIFT_CHECK(!needs(*p, Piece::Kind::kBos) || tokenizer_->bos_id(), UsageError,
                "chat template '" + meta_.name + "' needs the tokenizer's BOS token, but the tokenizer has none",
                "set bos_token in tokenizer_config.json, or pick another --template");
  }
}

std::string Template::expand(const std::string& text, const std::string* system, const std::string* query) const {
  // One pass, so that text inserted for one placeholder is never scanned for another.
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 2, "{{") == 0) {
      if (system && text.compare(i, 10, "{{SYSTEM}}") == 0) {
        out += *system;
        i += 10;
        continue;
      }
      if (query && text.compare(i, 9, "{{QUERY}}") == 0) {
        out += *query;
        i += 9;
        continue;
      }
      if (text.compare(i, 8, "{{DATE}}") == 0) {
        out += options_.date.empty() ? today_date() : options_.date;
        i += 8;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::vector<std::string> Template::stop_words() const {
  std::vector<std::string> words = meta_.stop_words;
  auto add = [&](const std::string& w) {
    if (!w.empty() && std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  };
  if (!meta_.suffix.empty()) {
    const Piece& last = meta_.suffix.back();
    if (last.kind == Piece::Kind::kText) {
      add(strip(last.text));
    } else {
      auto id = last.kind == Piece::Kind::kEos ? tokenizer_->eos_id() : tokenizer_->bos_id();
      if (id) add(tokenizer_->id_to_token(*id));
    }
  }
  if (tokenizer_->config().eos_token) add(*tokenizer_->config().eos_token);
  return words;
}

std::string Template::reply_text(std::string decoded, std::optional<bool> enable_thinking) const {
  const bool thinking = enable_thinking.value_or(default_enable_thinking());
  const std::string& response_prefix = thinking ? meta_.thinking_prefix : meta_.non_thinking_prefix;
  if (meta_.open_prompt_drops_newline && response_prefix.empty()) decoded.erase(0, decoded.find_first_not_of('\n'));
  return decoded;
}

std::vector<int64_t> Template::stop_token_ids() const {
  std::vector<int64_t> ids;
  for (const auto& word : stop_words()) {
    auto id = tokenizer_->token_to_id(word);
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  return ids;
}

std::optional<AgentTemplate> Template::agent_template() const {
  if (options_.agent_template) return options_.agent_template;
  if (meta_.tool_format == ToolFormat::kHermes) return AgentTemplate::kHermes;
  if (meta_.tool_format == ToolFormat::kLlama3) return AgentTemplate::kLlama3;
  if (meta_.tool_format == ToolFormat::kGlm4) return AgentTemplate::kGlm4;
  return std::nullopt;
}

std::vector<Template::Context> Template::build(const Conversation& messages, Mode mode, bool add_generation_prompt,
                                               bool enable_thinking, bool continue_final, const Tools* tools) const {
  check_tokens();
  const std::optional<AgentTemplate> agent = agent_template();
  auto need_agent = [&](const std::string& what) {
    SWIFT_CHECK(agent.has_value(), DataError,
                what + ", and chat template '" + meta_.name + "' has no agent template of its own",
                "choose how tools are written with --agent_template hermes, llama3 or react_en");
    return *agent;
  };
  // How tool results are written: the agent template's way, else the chat template's.
  const ToolFormat tool_format = !agent                               ? meta_.tool_format
                                 : *agent == AgentTemplate::kHermes   ? ToolFormat::kHermes
                                 : *agent == AgentTemplate::kLlama3   ? ToolFormat::kLlama3
                                 : *agent == AgentTemplate::kGlm4     ? ToolFormat::kGlm4
                                                                      : ToolFormat::kReact;
  const bool last_round_rule = mode == Mode::kTrain && options_.loss_rule == LossRule::kLastRound;

  // The system prompt: the data's (first message), else --system, else the template's default.
  std::optional<std::string> data_system;
  size_t first = 0;
  if (!messages.empty() && messages[0].role == Role::kSystem) {
    data_system = messages[0].content;
    first = 1;
  }

  // Gemma 3 (ms-swift's Gemma3Template): the system prompt (the data's, even empty, else --system) opens the first
  // message, whatever its role, before that message's newlines are stripped. It has no place for tool descriptions.
  std::optional<std::string> first_message_system;
  if (meta_.system_in_first_message) {
    first_message_system = data_system ? data_system : options_.system ? options_.system : meta_.default_system;
    SWIFT_CHECK(!tools || tools->empty(), UsageError,
                "chat template '" + meta_.name + "' has no system turn to describe tools in (ms-swift's neither)",
                "drop the tools, or pass --template with a template that has a system turn");
  }
  auto next_to_assistant = [&](size_t i) {  // ms-swift merges such replies into a list, which it does not strip
    return (i > first && messages[i - 1].role == Role::kAssistant) ||
           (i + 1 < messages.size() && messages[i + 1].role == Role::kAssistant);
  };

  // Turns: consecutive messages of one role joined (users' texts concatenated, assistants' replies kept apart
  // with their own loss switch, tool results grouped).
  std::vector<Turn> turns;
  for (size_t i = first; i < messages.size(); ++i) {
    const Message& m = messages[i];
    SWIFT_CHECK(m.role != Role::kSystem, DataError,
                "messages[" + std::to_string(i) + "] is a system message; only the first message may be one",
                "move the system prompt to the start of the conversation, or give it with --system");
    // The message's texts: its content, and for an assistant's tool calls the agent template's writing of them as
    // a part of its own (ms-swift's normalize_openai_tool_calls + _preprocess_tool_call; a message with calls but
    // no text is the calls alone).
    std::vector<std::string> texts;
    std::string content = m.content;
    if (m.role == Role::kAssistant && m.reasoning_content && meta_.is_thinking) {
      // As Qwen3's Jinja template writes reasoning_content.
      content = "<think>\n" + strip(*m.reasoning_content, "\n") + "\n</think>\n\n" + strip(content, "\n", true, false);
    }
    if (i == first && first_message_system) content = *first_message_system + "\n\n" + content;
    if (m.role == Role::kAssistant && meta_.strip_reply_newlines && !next_to_assistant(i))
      content = strip(content, "\n");
    if (!content.empty() || m.tool_calls.empty()) texts.push_back(std::move(content));
    if (m.role == Role::kAssistant && !m.tool_calls.empty())
      texts.push_back(format_tool_calls(need_agent("messages[" + std::to_string(i) + "] calls tools"), m.tool_calls));
    for (auto& text : texts) {
      if (!turns.empty() && turns.back().role == m.role) {
        Turn& t = turns.back();
        if (m.role == Role::kUser) {
          t.parts[0] += text;
        } else {
          t.parts.push_back(std::move(text));
          t.loss.push_back(m.loss);
        }
        continue;
      }
      turns.push_back(Turn{m.role, {std::move(text)}, {m.loss}, false});
    }
  }
  SWIFT_CHECK(!turns.empty(), DataError, "the conversation has no user or assistant message",
              "each row needs at least one user (or assistant) message");

  // Thinking (ms-swift's _add_non_thinking_prefix / _remove_history_thinking). Training keeps every reply's
  // thinking and gives every reply without one the empty think block; inference (and last_round training) only
  // touches replies after the last query and drops the thinking of earlier ones, as the model saw it.
  int last_query = last_query_turn(turns);
  if (!meta_.non_thinking_prefix.empty() && options_.add_non_thinking_prefix) {
    const int from = (mode != Mode::kTrain || last_round_rule) ? last_query : -1;
    for (int i = std::max(from, 0); i < static_cast<int>(turns.size()); ++i) {
      std::string& first_part = turns[i].parts[0];
      if (turns[i].role == Role::kAssistant && !starts_with(first_part, "<think>") &&
          !starts_with(first_part, meta_.non_thinking_prefix)) {
        first_part = meta_.non_thinking_prefix + first_part;
      }
    }
  }
  const bool preserve_thinking =
      (meta_.is_thinking || enable_thinking) ? (mode == Mode::kTrain && !last_round_rule) : true;
  if (!preserve_thinking) {
    for (int i = 0; i < last_query; ++i) {
      if (turns[i].role != Role::kAssistant) continue;
      std::string& first_part = turns[i].parts[0];
      size_t end = first_part.rfind("</think>");
      first_part = strip(end == std::string::npos ? first_part : first_part.substr(end + 8));
    }
  }

  // Rounds of (query, reply): a conversation that starts with a reply gets an empty query (pretraining text);
  // one that ends with a query gets a pending reply.
  if (turns[0].role == Role::kAssistant) turns.insert(turns.begin(), Turn{Role::kUser, {""}, {std::nullopt}, false});
  if (turns.size() % 2 == 1) turns.push_back(Turn{Role::kAssistant, {""}, {std::nullopt}, true});
  for (size_t i = 0; i < turns.size(); ++i) {
    const bool want_query = i % 2 == 0;
    const bool is_query = turns[i].role != Role::kAssistant;
    if (want_query != is_query || (i > 0 && turns[i].role == Role::kTool && turns[i - 1].role != Role::kAssistant)) {
      throw DataError("the conversation does not alternate user/tool and assistant turns: turn " +
                          std::to_string(i) + " is '" + std::string(role_name(turns[i].role)) + "' after '" +
                          std::string(role_name(turns[i > 0 ? i - 1 : 0].role)) + "'",
                      "a tool result must follow the assistant message that called the tool, and each user turn "
                      "an assistant reply");
    }
  }
  if (!meta_.multi_round && turns.size() > 2) turns.erase(turns.begin(), turns.end() - 2);
  last_query = last_query_turn(turns);

  std::optional<std::string> system = data_system ? data_system : options_.system ? options_.system
                                                                                   : meta_.default_system;
  if (tools && !tools->empty()) {  // ms-swift's _get_system: the agent template describes the tools
    std::string* first_user = turns[0].role == Role::kUser && !turns[0].parts[0].empty() ? &turns[0].parts[0] : nullptr;
    system = format_tools(need_agent("the conversation has tools"), *tools, system.value_or(""), first_user);
  }
  if (first_message_system) system.reset();  // already in the first message
  const bool with_system = system && !system->empty() && !meta_.system_prefix.empty();

  std::vector<Context> out;
  std::vector<int64_t> post_bos, post_eos;  // what the tokenizer's post-processor adds around a text
  if (meta_.auto_add_bos) {
    std::vector<int64_t> with = tokenizer_->encode("a", true), without = tokenizer_->encode("a", false);
    auto at = std::search(with.begin(), with.end(), without.begin(), without.end());
    if (!without.empty() && at != with.end()) {
      post_bos.assign(with.begin(), at);
      post_eos.assign(at + without.size(), with.end());
    }
    if (!post_bos.empty()) out.push_back(Context::of_ids(post_bos, ContextType::kOther));
  }
  auto append = [&](const Prompt& prompt, ContextType type, const std::string* query) {
    for (const Piece& piece : prompt) {
      if (piece.kind == Piece::Kind::kText) {
        std::string text = expand(piece.text, with_system ? &*system : nullptr, query);
        if (!text.empty()) out.push_back(Context::of_text(std::move(text), type));
      } else {
        auto id = piece.kind == Piece::Kind::kEos ? tokenizer_->eos_id() : tokenizer_->bos_id();
        out.push_back(Context::of_ids({*id}, type));
      }
    }
  };
  auto response_prefix = [&]() -> const std::string& {
    return enable_thinking ? meta_.thinking_prefix : meta_.non_thinking_prefix;
  };

  append(with_system ? meta_.system_prefix : meta_.prefix, ContextType::kOther, nullptr);
  // ReAct tool results (ms-swift's ReactCompatMixin._format_tool_responses): they go on in the turn of the reply
  // that called the tool, after its "Observation:". Every agent template writes them so after a ReAct-style call.
  // GLM-4's go on after the calls' <|observation|> too, and open the next reply themselves.
  std::vector<bool> react_results(turns.size(), false);
  for (size_t t = 1; agent && t < turns.size(); ++t) {
    if (turns[t].role != Role::kTool || turns[t - 1].role != Role::kAssistant) continue;
    std::string& call = turns[t - 1].parts.back();
    const bool with_action = call.find("Action:") != std::string::npos && call.find("Action Input:") != std::string::npos;
    if (!with_action && tool_format != ToolFormat::kReact && tool_format != ToolFormat::kGlm4) continue;
    std::string text;
    if (with_action) {
      if (!ends_with(call, "Observation:")) call += ends_with(call, "\n") ? "Observation:" : "\nObservation:";
      for (size_t k = 0; k < turns[t].parts.size(); ++k) {
        if (k > 0) text += "Observation:";
        text += turns[t].parts[k];
        if (!ends_with(turns[t].parts[k], "\n")) text += "\n";
      }
    } else if (tool_format == ToolFormat::kGlm4) {
      for (size_t k = 0; k < turns[t].parts.size(); ++k) text += (k > 0 ? "<|observation|>\n" : "\n") + turns[t].parts[k];
      text += "<|assistant|>\n";
    } else {
      for (const auto& result : turns[t].parts) text += result;
    }
    turns[t].parts = {text};
    react_results[t] = true;
  }

  const int rounds = static_cast<int>(turns.size() / 2);
  const std::vector<std::string> stops = stop_words();
  for (int r = 0; r < rounds; ++r) {
    const Turn& query = turns[2 * r];
    const Turn& reply = turns[2 * r + 1];
    const bool last = r == rounds - 1;
    const bool react = react_results[2 * r];
    if (react) {
      out.push_back(Context::of_text(query.parts[0], ContextType::kOther));
    } else if (query.role == Role::kTool && tool_format == ToolFormat::kLlama3) {
      std::string text;
      for (const auto& result : query.parts) {
        text += "<|start_header_id|>tool<|end_header_id|>\n\n" + result + "<|eot_id|>";
      }
      out.push_back(Context::of_text(std::move(text), ContextType::kOther));
    } else if (query.role == Role::kTool) {
      std::string text;
      for (const auto& result : query.parts) {
        if (!text.empty()) text += "\n";
        text += tool_format == ToolFormat::kHermes ? "<tool_response>\n" + result + "\n</tool_response>" : result;
      }
      append(meta_.prompt, ContextType::kOther, &text);
    } else {
      append(meta_.prompt, ContextType::kOther, &query.parts[0]);
    }
    if (reply.pending) {
      if (add_generation_prompt) {
        if (!react) append(meta_.generation_prompt, ContextType::kOther, nullptr);
        if (!response_prefix().empty()) out.push_back(Context::of_text(response_prefix(), ContextType::kOther));
      }
      continue;
    }
    if (!react) append(meta_.generation_prompt, ContextType::kOther, nullptr);
    for (size_t j = 0; j < reply.parts.size(); ++j) {
      out.push_back(Context::of_reply(reply.parts[j], r, reply.loss[j]));
    }
    if (!last) {
      if (!react_results[2 * r + 2]) append(meta_.chat_sep, ContextType::kOther, nullptr);
      continue;
    }
    if (continue_final) continue;  // the model goes on writing this reply
    // The end of the last reply: training adds it unless the reply already ends with a stop word or the
    // tokenizer adds its own EOS (ms-swift's add_eos); a rendered conversation always has it.
    const std::string& tail = reply.parts.back();
    bool add_suffix = mode != Mode::kTrain ||
                      (post_eos.empty() && std::none_of(stops.begin(), stops.end(), [&](const std::string& w) {
                         return ends_with(tail, w);
                       }));
    if (add_suffix) append(meta_.suffix, ContextType::kSuffix, nullptr);
    if (mode != Mode::kTrain && add_generation_prompt) {
      append(meta_.generation_prompt, ContextType::kOther, nullptr);
      if (!response_prefix().empty()) out.push_back(Context::of_text(response_prefix(), ContextType::kOther));
    }
  }
  // GLM-4 (GLM4Template.strip_newline): "<|assistant|>\n" loses its newline where the rendering ends open there (the
  // model writes it) and where a tool call follows (written "<|assistant|>name\n{...}<|observation|>").
  if (meta_.open_prompt_drops_newline) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].ids.empty() || out[i].type == ContextType::kResponse || !ends_with(out[i].text, "<|assistant|>\n")) continue;
      size_t next = i + 1;
      while (next < out.size() && out[next].ids.empty() && out[next].text.empty()) ++next;
      if (next == out.size() || out[next].text.find("<|observation|>") != std::string::npos) out[i].text.pop_back();
    }
  }
  if (!post_eos.empty()) out.push_back(Context::of_ids(post_eos, ContextType::kSuffix));

  // Loss (ms-swift's LossScale with binary weights): a reply's own `loss` wins; else `all` marks everything,
  // `default` the replies and the final suffix, `last_round` only replies after the last query.
  for (Context& c : out) {
    if (c.type == ContextType::kResponse && c.loss) {
      c.has_loss = *c.loss;
      continue;
    }
    const bool assistant = c.type != ContextType::kOther;
    const bool in_last_round = c.type != ContextType::kResponse || 2 * c.round >= last_query;
    switch (options_.loss_rule) {
      case LossRule::kAll: c.has_loss = true; break;
      case LossRule::kDefault: c.has_loss = assistant; break;
      case LossRule::kLastRound: c.has_loss = assistant && in_last_round; break;
    }
  }
  // ignore_empty_think: the empty think block opening a scored reply becomes a context of its own without loss
  // (tokenized apart from the reply, as ms-swift splits the context at the pattern).
  if (mode == Mode::kTrain && options_.ignore_empty_think) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].type != ContextType::kResponse || !out[i].has_loss || !out[i].ids.empty()) continue;
      const size_t n = empty_think_length(out[i].text);
      if (n == 0) continue;
      // ms-swift matches the patterns again at the start of what follows: a rest that opens with one too (a reply
      // written as "</think>\n\n..." behind the added block) carries no loss at all.
      if (empty_think_length(std::string_view(out[i].text).substr(n)) > 0) {
        out[i].has_loss = false;
        continue;
      }
      Context think = out[i];
      think.text.resize(n);
      think.has_loss = false;
      out[i].text.erase(0, n);
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), std::move(think));
      ++i;
    }
  }
  return out;
}

Encoded Template::tokenize(std::vector<Context> contexts, bool with_labels) const {
  // Join adjacent texts with equal loss (ms-swift's _simplify_context_list), so template text and user text are
  // tokenized together and every loss boundary is a tokenization boundary.
  struct Chunk {
    std::string text;
    std::vector<int64_t> ids;
    bool is_ids;
    bool has_loss;
  };
  std::vector<Chunk> chunks;
  for (Context& c : contexts) {
    if (!c.ids.empty()) {
      chunks.push_back(Chunk{"", std::move(c.ids), true, c.has_loss});
    } else if (c.text.empty()) {
      continue;
    } else if (!chunks.empty() && !chunks.back().is_ids && chunks.back().has_loss == c.has_loss) {
      chunks.back().text += c.text;
    } else {
      chunks.push_back(Chunk{std::move(c.text), {}, false, c.has_loss});
    }
  }

  Encoded e;
  for (const Chunk& chunk : chunks) {
    std::vector<int64_t> ids = chunk.is_ids ? chunk.ids : tokenizer_->encode(chunk.text, false);
    if (chunk.is_ids) {
      for (int64_t id : ids) e.text += tokenizer_->id_to_token(id);
    } else {
      e.text += chunk.text;
    }
    e.input_ids.insert(e.input_ids.end(), ids.begin(), ids.end());
    if (with_labels) {
      if (chunk.has_loss) {
        e.labels.insert(e.labels.end(), ids.begin(), ids.end());
      } else {
        e.labels.insert(e.labels.end(), ids.size(), kIgnoreIndex);
      }
    }
  }
  if (!with_labels || e.labels.empty()) return e;

  // ms-swift's _add_dynamic_eos: a stretch without loss right after a reply that begins with the suffix's tokens
  // (the chat_sep after an earlier reply: <|im_end|>\n, <|eot_id|>) gets loss on those tokens, so the model
  // learns to end every reply, not only the last.
  std::vector<int64_t> suffix_ids;
  for (const Piece& piece : meta_.suffix) {
    if (piece.kind == Piece::Kind::kText) {
      auto ids = tokenizer_->encode(piece.text, false);
      suffix_ids.insert(suffix_ids.end(), ids.begin(), ids.end());
    } else {
      suffix_ids.push_back(piece.kind == Piece::Kind::kEos ? *tokenizer_->eos_id() : *tokenizer_->bos_id());
    }
  }
  const size_t n = e.labels.size();
  if (!suffix_ids.empty()) {
    for (size_t start = 1; start < n; ++start) {
      if (e.labels[start] != kIgnoreIndex || e.labels[start - 1] == kIgnoreIndex) continue;
      size_t end = start;
      while (end < n && e.labels[end] == kIgnoreIndex) ++end;
      if (end - start >= suffix_ids.size() &&
          std::equal(suffix_ids.begin(), suffix_ids.end(), e.input_ids.begin() + start)) {
        std::copy(suffix_ids.begin(), suffix_ids.end(), e.labels.begin() + start);
      }
      start = end;
    }
  }
  e.labels[0] = kIgnoreIndex;  // nothing predicts the first token
  return e;
}

std::string Template::render(const Conversation& messages, bool add_generation_prompt,
                             std::optional<bool> enable_thinking) const {
  std::vector<Context> contexts =
      build(messages, Mode::kRender, add_generation_prompt, enable_thinking.value_or(default_enable_thinking()));
  std::string text;
  for (const Context& c : contexts) {
    if (c.ids.empty()) {
      text += c.text;
    } else {
      for (int64_t id : c.ids) text += tokenizer_->id_to_token(id);
    }
  }
  return text;
}

Encoded Template::encode(const Conversation& messages, const Tools* tools) const {
  return tokenize(build(messages, Mode::kTrain, true, default_enable_thinking(), false, tools), true);
}

std::vector<int64_t> Template::encode_prompt(const Conversation& messages, std::optional<bool> enable_thinking,
                                             PromptEnd end, const Tools* tools) const {
  const bool ends_with_reply = !messages.empty() && messages.back().role == Role::kAssistant;
  if (end == PromptEnd::kAuto) end = ends_with_reply ? PromptEnd::kContinue : PromptEnd::kGenerationPrompt;
  SWIFT_CHECK(end != PromptEnd::kContinue || ends_with_reply, DataError,
              "continue_final_message: the conversation does not end with an assistant message",
              "end the messages with the assistant's partial reply to continue it, or drop continue_final_message");
  return tokenize(build(messages, Mode::kInfer, end == PromptEnd::kGenerationPrompt,
                        enable_thinking.value_or(default_enable_thinking()), end == PromptEnd::kContinue, tools),
                  false)
      .input_ids;
}

}  // namespace swift::templates
