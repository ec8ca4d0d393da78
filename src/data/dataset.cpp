// Reading dataset files and normalising rows to messages, following ms-swift's AutoPreprocessor
// (MessagesPreprocessor, AlpacaPreprocessor, ResponsePreprocessor).
#include "swift/data/dataset.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "swift/core/error.h"
#include "swift/hub/hub_resolver.h"
#include "swift/parquet/parquet_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::data {

namespace {

const char* const kFormatsHint =
    "each row needs \"messages\" ([{\"role\": \"user\", \"content\": ...}, {\"role\": \"assistant\", ...}]), "
    "ShareGPT \"conversations\" ([{\"from\": \"human\", \"value\": ...}, ...]), alpaca "
    "\"instruction\"/\"input\"/\"output\", or \"query\"/\"response\" (docs/datasets.md)";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A column by any of its aliases (case-insensitive, as ms-swift's row_keys_map); nullptr when absent or null.
// Two aliases present at once are ambiguous, and ms-swift then maps neither; so do we.
const json* find_column(const json& row, std::initializer_list<const char*> aliases, std::string* found = nullptr) {
  const json* hit = nullptr;
  int hits = 0;
  for (auto it = row.begin(); it != row.end(); ++it) {
    const std::string key = lower(it.key());
    for (const char* alias : aliases) {
      if (key == alias && !it.value().is_null()) {
        hit = &it.value();
        if (found) *found = it.key();
        ++hits;
      }
    }
  }
  return hits == 1 ? hit : nullptr;
}

std::string text_of(const json& v, const std::string& where, const std::string& what) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  throw DataError(where + ": " + what + " must be text, got " + v.dump().substr(0, 80), kFormatsHint);
}

json message(const std::string& role, const std::string& content) { return {{"role", role}, {"content", content}}; }

std::string standard_role(const std::string& role, const std::string& where) {
  const std::string r = lower(role);
  if (r == "user" || r == "human") return "user";
  if (r == "assistant" || r == "gpt" || r == "bot") return "assistant";
  if (r == "system") return "system";
  if (r == "tool" || r == "tool_response" || r == "function" || r == "observation" || r == "ipython") return "tool";
  if (r == "tool_call") return "tool_call";  // ms-swift's form of an assistant's call (templates::conversation_from_json)
  throw DataError(where + ": unknown role \"" + role + "\"", "roles are system, user/human, assistant/gpt/bot, tool");
}

json normalise_messages(const json& raw_in, const json& row, const std::string& where) {
  json raw = raw_in;
  if (raw.is_string()) {  // some exports store the list as a JSON string
    try {
      raw = json::parse(raw.get<std::string>());
    } catch (const json::exception&) {
      throw DataError(where + ": \"messages\" is a string that is not a JSON list", kFormatsHint);
    }
  }
  SWIFT_CHECK(raw.is_array() && !raw.empty(), DataError, where + ": \"messages\" must be a non-empty list", kFormatsHint);
  json messages = json::array();
  std::string system_column;
  if (const json* s = find_column(row, {"system", "system_prompt"})) system_column = text_of(*s, where, "system");
  const bool sharegpt_pairs = raw[0].is_object() && !raw[0].contains("role") && !raw[0].contains("content") &&
                              !raw[0].contains("from") && !raw[0].contains("value");
  if (sharegpt_pairs) {  // [{"user"|"human": q, "assistant"|"gpt"|"bot": a}, ...]
    if (!system_column.empty()) messages.push_back(message("system", system_column));
    for (const auto& turn : raw) {
      const json* q = find_column(turn, {"user", "human", "tool"});
      const json* a = find_column(turn, {"assistant", "gpt", "bot"});
      SWIFT_CHECK(q && a, DataError, where + ": a ShareGPT turn needs a user and an assistant entry", kFormatsHint);
      messages.push_back(message(turn.contains("tool") ? "tool" : "user", text_of(*q, where, "user turn")));
      messages.push_back(message("assistant", text_of(*a, where, "assistant turn")));
    }
    return messages;
  }
  for (size_t i = 0; i < raw.size(); ++i) {
    const json& m = raw[i];
    const std::string at = where + " message " + std::to_string(i);
    SWIFT_CHECK(m.is_object(), DataError, at + " must be an object", kFormatsHint);
    const json* role = find_column(m, {"role", "from"});
    const json* content = find_column(m, {"content", "value"});
    SWIFT_CHECK(role && role->is_string(), DataError, at + " has no \"role\" (or \"from\")", kFormatsHint);
    const json* tool_calls = find_column(m, {"tool_calls"});
    const bool calls = tool_calls && !tool_calls->is_null();
    SWIFT_CHECK(content != nullptr || calls, DataError, at + " has no \"content\" (or \"value\")", kFormatsHint);
    const std::string standard = standard_role(role->get<std::string>(), at);
    // A tool call's content is its {"name", "arguments"} (an object or its JSON text), and a tool result may be an
    // object too: kept as JSON text, as ms-swift writes them.
    const bool call_content = (standard == "tool_call" || standard == "tool") && content && (content->is_object() || content->is_array());
    json out = message(standard, !content || content->is_null() ? std::string()
                                 : call_content              ? content->dump()
                                                             : text_of(*content, at, "content"));
    if (calls) out["tool_calls"] = *tool_calls;  // OpenAI's assistant tool calls, read by the chat template
    if (m.contains("loss") && !m.at("loss").is_null()) {
      SWIFT_CHECK(m.at("loss").is_boolean() || m.at("loss").is_number(), DataError,
                  at + ": \"loss\" must be true/false", "write \"loss\": false to exclude a reply from the loss");
      out["loss"] = m.at("loss").is_boolean() ? m.at("loss").get<bool>() : m.at("loss").get<double>() != 0;
    }
    messages.push_back(out);
  }
  if (!system_column.empty() && messages[0]["role"] != "system")
    messages.insert(messages.begin(), message("system", system_column));
  return messages;
}

// instruction/input/output or query/response(+history, system) -> messages.
json normalise_pairs(const json& row, const std::string& where) {
  std::optional<std::string> query;
  const json* response = nullptr;
  const bool alpaca = find_column(row, {"instruction"}) && row.contains("input");
  if (alpaca) {
    const json* instruction = find_column(row, {"instruction"});
    const json* input = find_column(row, {"input"});
    // ms-swift's AlpacaPreprocessor joins them with "\n" unconditionally.
    query = (instruction ? text_of(*instruction, where, "instruction") : "") + "\n" +
            (input ? text_of(*input, where, "input") : "");
    response = find_column(row, {"output", "response", "answer"});
  } else {
    if (const json* q = find_column(row, {"query", "prompt", "input", "instruction", "question", "problem"}))
      query = text_of(*q, where, "query");
    response = find_column(row, {"response", "answer", "output", "targets", "target", "answer_key", "solution", "text",
                                 "completion", "content"});
  }
  if (!response && !query) {
    std::string columns;
    for (auto it = row.begin(); it != row.end(); ++it) columns += (columns.empty() ? "" : ", ") + it.key();
    throw DataError(where + ": no layout fits this row (columns: " + columns + ")", kFormatsHint);
  }
  json messages = json::array();
  if (const json* s = find_column(row, {"system", "system_prompt"})) messages.push_back(message("system", text_of(*s, where, "system")));
  if (const json* h = find_column(row, {"history"})) {
    json history = *h;
    if (history.is_string()) history = json::parse(history.get<std::string>(), nullptr, false);
    SWIFT_CHECK(history.is_array(), DataError, where + ": \"history\" must be a list of [query, response] pairs",
                "e.g. \"history\": [[\"hi\", \"hello!\"]]");
    for (const auto& pair : history) {
      SWIFT_CHECK(pair.is_array() && pair.size() == 2, DataError,
                  where + ": each \"history\" entry must be [query, response]", "e.g. [[\"hi\", \"hello!\"]]");
      messages.push_back(message("user", text_of(pair[0], where, "history query")));
      messages.push_back(message("assistant", text_of(pair[1], where, "history response")));
    }
  }
  if (query) messages.push_back(message("user", *query));
  // A row without a response is a prompt (inference); training drops it as having nothing to learn.
  if (response) messages.push_back(message("assistant", text_of(*response, where, "response")));
  return messages;
}

std::vector<std::string> parse_csv_record(std::istream& in, size_t& line, bool& ok) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false, any = false;
  ok = false;
  for (int c; (c = in.get()) != EOF;) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          field += '"';
          in.get();
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += static_cast<char>(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && in.peek() == '\n') in.get();
      ++line;
      fields.push_back(field);
      ok = true;
      return fields;
    } else {
      field += static_cast<char>(c);
    }
  }
  if (quoted) throw DataError("unterminated quoted field", "close every \" in the CSV file");
  if (any) {
    fields.push_back(field);
    ok = true;
  }
  return fields;
}

std::vector<json> read_csv(const fs::path& path, std::istream& in) {
  size_t line = 1;
  bool ok = false;
  auto header = with_context(path.string() + ":" + std::to_string(line), [&] { return parse_csv_record(in, line, ok); });
  SWIFT_CHECK(ok && !header.empty(), DataError, path.string() + " is empty", "a CSV dataset needs a header row");
  std::vector<json> rows;
  while (true) {
    const size_t row_line = line;
    auto fields = with_context(path.string() + ":" + std::to_string(row_line), [&] { return parse_csv_record(in, line, ok); });
    if (!ok) break;
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    SWIFT_CHECK(fields.size() == header.size(), DataError,
                path.string() + ":" + std::to_string(row_line) + ": " + std::to_string(fields.size()) +
                    " fields, the header has " + std::to_string(header.size()),
                "quote fields that contain commas or newlines");
    json row = json::object();
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

DatasetSpec parse_dataset_spec(const std::string& text, const std::string& flag) {
  DatasetSpec spec;
  spec.text = text;
  std::string path = text;
  if (auto hash = text.rfind('#'); hash != std::string::npos) {
    const std::string n = text.substr(hash + 1);
    const bool digits = !n.empty() && std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isdigit(c); });
    SWIFT_CHECK(digits, UsageError, flag + " '" + text + "': the part after # must be a row count",
                "write " + flag + " data.jsonl#500 to use 500 rows");
    // Rows are held in memory: more than this is a typo, not a dataset (and would not fit).
    constexpr int64_t kMaxRows = 100000000;
    SWIFT_CHECK(n.size() <= 18 && std::stoll(n) <= kMaxRows, UsageError,
                flag + " '" + text + "': " + n + " rows is more than the " + std::to_string(kMaxRows) + " a dataset may take",
                "give the number of rows to use (more than the file has repeats it)");
    spec.sample = std::stoll(n);
    path = text.substr(0, hash);
  }
  SWIFT_CHECK(!path.empty(), UsageError, flag + " '" + text + "' names no file", "give a .jsonl, .json, .csv or .parquet path");
  spec.path = path;
  return spec;
}

std::vector<json> read_rows(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  SWIFT_CHECK(in.good(), DataError, "cannot open dataset " + path.string(),
              "check the path (datasets are local .jsonl, .json, .csv or .parquet files)");
  const std::string ext = lower(path.extension().string());
  std::vector<json> rows;
  if (ext == ".jsonl") {
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json row = json::parse(line, nullptr, false);
      SWIFT_CHECK(!row.is_discarded(), DataError, path.string() + ":" + std::to_string(n) + " is not valid JSON",
                  "each line of a .jsonl file must be one JSON object");
      SWIFT_CHECK(row.is_object(), DataError, path.string() + ":" + std::to_string(n) + " is not a JSON object",
                  "each line of a .jsonl file must be one JSON object");
      rows.push_back(std::move(row));
    }
  } else if (ext == ".json") {
    std::stringstream buffer;
    buffer << in.rdbuf();
    json all;
    try {
      all = json::parse(buffer.str());
    } catch (const json::exception& e) {
      throw DataError(path.string() + " is not valid JSON: " + e.what(), "a .json dataset is a list of objects");
    }
    if (all.is_object()) all = json::array({all});
    SWIFT_CHECK(all.is_array(), DataError, path.string() + " must hold a list of objects", "a .json dataset is a list of objects");
    for (size_t i = 0; i < all.size(); ++i) {
      SWIFT_CHECK(all[i].is_object(), DataError, path.string() + " item " + std::to_string(i) + " is not an object",
                  "a .json dataset is a list of objects");
      rows.push_back(std::move(all[i]));
    }
  } else if (ext == ".csv") {
    rows = read_csv(path, in);
  } else if (ext == ".parquet") {
    rows = parquet::read_parquet_file(path);
  } else if (ext == ".txt") {  // plain text for pretraining: one row a non-empty line
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) rows.push_back({{"text", line}});
    }
  } else {
    throw DataError("dataset " + path.string() + " has an unsupported extension '" + ext + "'",
                    "use .jsonl, .json, .csv, .parquet or .txt");
  }
  return rows;
}

namespace {

// A chosen/rejected side of a preference row: a reply (text) or messages (a list; with a prompt column, the
// replies that follow it).
json preference_side(const json& v, const std::string& where, const std::string& what) {
  if (v.is_array())
    return normalise_messages(v, json::object(), where + " \"" + what + "\"");
  return json::array({message("assistant", text_of(v, where, what))});
}

// The widespread prompt/chosen/rejected layout (TRL's preference datasets, UltraFeedback, HH-RLHF): the prompt
// is text or messages, or absent when chosen and rejected are whole conversations. -> messages (the chosen
// conversation) + rejected_messages.
json normalise_chosen_rejected(const json& row, const std::string& where) {
  json prompt = json::array();
  if (const json* s = find_column(row, {"system", "system_prompt"})) prompt.push_back(message("system", text_of(*s, where, "system")));
  if (const json* p = find_column(row, {"prompt", "query", "question"})) {
    if (p->is_array()) {
      for (auto& m : normalise_messages(*p, json::object(), where + " \"prompt\"")) prompt.push_back(m);
    } else {
      prompt.push_back(message("user", text_of(*p, where, "prompt")));
    }
  }
  json out = row;
  for (const char* k : {"prompt", "query", "question", "chosen", "rejected", "system", "system_prompt"}) out.erase(k);
  json chosen = prompt, rejected = prompt;
  for (auto& m : preference_side(*find_column(row, {"chosen"}), where, "chosen")) chosen.push_back(m);
  for (auto& m : preference_side(*find_column(row, {"rejected"}), where, "rejected")) rejected.push_back(m);
  out["messages"] = chosen;
  out["rejected_messages"] = rejected;
  return out;
}

// ms-swift's rejected_response (a reply, or assistant/tool messages): the chosen conversation up to its last
// user or tool turn, then the rejected reply. -> rejected_messages.
void normalise_rejected(json& out, const std::string& where) {
  if (out.contains("rejected_messages") && !out["rejected_messages"].is_null()) {
    out["rejected_messages"] = normalise_messages(out["rejected_messages"], json::object(), where + " \"rejected_messages\"");
  } else if (out.contains("rejected_response") && !out["rejected_response"].is_null()) {
    const json& messages = out["messages"];
    size_t prompt_end = 0;  // one past the last user/tool message
    for (size_t i = 0; i < messages.size(); ++i)
      if (messages[i]["role"] == "user" || messages[i]["role"] == "tool") prompt_end = i + 1;
    SWIFT_CHECK(prompt_end > 0, DataError, where + ": \"rejected_response\" needs a user turn before it",
                "give the prompt in \"messages\" (or \"query\")");
    json rejected(messages.begin(), messages.begin() + static_cast<long>(prompt_end));
    for (auto& m : preference_side(out["rejected_response"], where, "rejected_response")) rejected.push_back(m);
    out["rejected_messages"] = rejected;
  } else {
    out.erase("rejected_messages");
    out.erase("rejected_response");
    return;
  }
  out.erase("rejected_response");
  SWIFT_CHECK(out["rejected_messages"] != out["messages"], DataError,
              where + ": the rejected response is the same as the chosen one", "a preference pair needs two different replies");
}

}  // namespace

json normalise_row(const json& row, const std::string& where) {
  const json* completion = find_column(row, {"completion"});
  const json* prompt = find_column(row, {"prompt"});
  if (completion && (completion->is_array() || (prompt && prompt->is_array())) &&
      !find_column(row, {"messages", "conversation", "conversations"})) {
    // TRL's unpaired layout (KTO) with message lists: prompt + completion -> messages.
    json out = row;
    json messages = json::array();
    if (const json* s = find_column(row, {"system", "system_prompt"})) messages.push_back(message("system", text_of(*s, where, "system")));
    if (prompt) {
      if (prompt->is_array()) {
        for (auto& m : normalise_messages(*prompt, json::object(), where + " \"prompt\"")) messages.push_back(m);
      } else {
        messages.push_back(message("user", text_of(*prompt, where, "prompt")));
      }
    }
    for (auto& m : preference_side(*completion, where, "completion")) messages.push_back(m);
    for (const char* k : {"prompt", "completion", "system", "system_prompt"}) out.erase(k);
    out["messages"] = messages;
    return out;
  }
  if (find_column(row, {"chosen"}) && find_column(row, {"rejected"}) &&
      !find_column(row, {"messages", "conversation", "conversations"})) {
    json out = normalise_chosen_rejected(row, where);
    normalise_rejected(out, where);
    return out;
  }
  json out = row;
  std::string key;
  json messages;
  if (const json* m = find_column(row, {"messages", "conversation", "conversations"}, &key)) {
    messages = normalise_messages(*m, row, where);
    out.erase(key);
  } else {
    messages = normalise_pairs(row, where);
    // "solution" stays a column too, as ms-swift keeps it: GRPO's accuracy reward reads it.
    for (const char* k : {"query", "prompt", "input", "instruction", "question", "problem", "response", "answer", "output",
                          "targets", "target", "answer_key", "text", "completion", "content", "history"})
      out.erase(k);
  }
  for (const char* k : {"system", "system_prompt"}) out.erase(k);
  out["messages"] = messages;
  normalise_rejected(out, where);
  return out;
}

std::map<std::string, std::string> parse_columns(const std::string& text) {
  std::map<std::string, std::string> out;
  if (text.empty()) return out;
  json j = json::parse(text, nullptr, false);
  SWIFT_CHECK(j.is_object(), UsageError, "--columns must be a JSON object, got '" + text + "'",
              "e.g. --columns '{\"src\": \"query\", \"tgt\": \"response\"}'");
  for (auto it = j.begin(); it != j.end(); ++it) {
    SWIFT_CHECK(it.value().is_string(), UsageError, "--columns: the new name of '" + it.key() + "' must be a string",
                "e.g. --columns '{\"src\": \"query\"}'");
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

std::vector<fs::path> dataset_files(const fs::path& path) {
  if (!fs::is_directory(path)) return {path};
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(path)) {
    const std::string ext = lower(entry.path().extension().string());
    if (entry.is_regular_file() && (ext == ".jsonl" || ext == ".json" || ext == ".csv" || ext == ".parquet" || ext == ".txt"))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  SWIFT_CHECK(!files.empty(), DataError, "dataset folder " + path.string() + " has no .jsonl/.json/.csv/.parquet/.txt files",
              "point --dataset at the files or a folder holding them");
  return files;
}

std::vector<fs::path> spec_files(const DatasetSpec& spec, const DatasetOptions& options, const std::string& flag) {
  if (is_builtin_dataset(spec.path.string())) return {};
  if (fs::exists(spec.path)) return dataset_files(spec.path);
  const auto id = hub::parse_dataset_id(spec.path.string());
  SWIFT_CHECK(id.has_value(), DataError, flag + " " + spec.path.string() + " does not exist",
              "give a local .jsonl/.json/.csv/.parquet/.txt file, a folder of them, a hub dataset id (org/name), or a built-in "
              "dataset (" + builtin_dataset_names() + ")");
  return hub::resolve_dataset(*id, options.hub, flag);
}

void check_local_datasets(const std::vector<std::string>& specs, const std::string& flag) {
  for (const auto& text : specs) {
    const DatasetSpec spec = parse_dataset_spec(text, flag);
    if (is_builtin_dataset(spec.path.string())) continue;
    if (!fs::exists(spec.path)) {
      if (hub::parse_dataset_id(spec.path.string())) continue;  // downloaded (or found in a cache) when read
      throw DataError(flag + " " + spec.path.string() + " does not exist",
                      "give a local .jsonl/.json/.csv/.parquet/.txt file, a folder of them, a hub dataset id (org/name), or a "
                      "built-in dataset (" + builtin_dataset_names() + ")");
    }
    for (const auto& file : dataset_files(spec.path)) {
      std::ifstream in(file, std::ios::binary);
      SWIFT_CHECK(in.good(), DataError, "cannot open dataset " + file.string(), "check the path and its permissions");
      char c = 0;
      bool content = false;
      while (!content && in.get(c)) content = !std::isspace(static_cast<unsigned char>(c));
      SWIFT_CHECK(content, DataError, "dataset " + file.string() + " has no rows", "check the file");
    }
  }
}

json rename_columns(json row, const std::map<std::string, std::string>& columns) {
  for (const auto& [from, to] : columns) {
    if (!row.contains(from)) continue;
    json value = row[from];
    row.erase(from);
    row[to] = std::move(value);
  }
  return row;
}

std::vector<json> load_datasets(const std::vector<std::string>& specs, uint64_t seed, const std::string& flag,
                                const DatasetOptions& options) {
  std::vector<json> all;
  std::mt19937_64 rng(seed);
  for (const auto& text : specs) {
    const DatasetSpec spec = parse_dataset_spec(text, flag);
    const bool is_builtin = is_builtin_dataset(spec.path.string());
    const auto files = spec_files(spec, options, flag);
    std::vector<json> rows;
    std::vector<std::string> where;  // per row, for errors
    if (is_builtin) {
      rows = builtin_dataset(spec.path.string(), options.builtin);
    } else {
      for (const auto& file : files) {
        auto file_rows = read_rows(file);
        for (size_t i = 0; i < file_rows.size(); ++i) {
          rows.push_back(rename_columns(std::move(file_rows[i]), options.columns));
          where.push_back(file.string() + " row " + std::to_string(i + 1));
        }
      }
    }
    SWIFT_CHECK(!rows.empty(), DataError, "dataset " + spec.path.string() + " has no rows", "check the file");
    std::vector<size_t> order(rows.size());
    std::iota(order.begin(), order.end(), 0);
    if (spec.sample) {
      const size_t n = static_cast<size_t>(*spec.sample), len = rows.size();
      std::vector<size_t> picked;
      for (size_t r = 0; r < n / len; ++r) picked.insert(picked.end(), order.begin(), order.end());
      std::shuffle(order.begin(), order.end(), rng);
      picked.insert(picked.end(), order.begin(), order.begin() + static_cast<long>(n % len));
      order = std::move(picked);
    }
    for (size_t i : order) all.push_back(is_builtin ? rows[i] : normalise_row(rows[i], where[i]));
  }
  return all;
}

}  // namespace swift::data
