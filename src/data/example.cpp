// Rows encoded into examples: the chat template, --max_length and --truncation_strategy.
#include "swift/data/example.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>

#include "swift/core/error.h"
#include "swift/template/agent_template.h"
#include "swift/template/message.h"
#include "swift/template/template.h"

namespace swift::data {

Truncation parse_truncation(const std::string& name) {
  if (name == "delete") return Truncation::kDelete;
  if (name == "left") return Truncation::kLeft;
  if (name == "right") return Truncation::kRight;
  throw UsageError("--truncation_strategy '" + name + "' is not known", "use delete, left or right");
}

std::string EncodeReport::summary() const {
  std::ostringstream s;
  s << rows << " rows: " << kept << " kept";
  if (truncated) s << ", " << truncated << " truncated to --max_length";
  if (deleted_too_long) s << ", " << deleted_too_long << " deleted as longer than --max_length";
  if (deleted_no_loss) s << ", " << deleted_no_loss << " dropped with no token to learn";
  return s.str();
}

namespace {
bool has_loss(const std::vector<int64_t>& labels) {
  // The first label can never be predicted (nothing precedes it).
  return std::any_of(labels.begin() + (labels.empty() ? 0 : 1), labels.end(), [](int64_t l) { return l != -100; });
}
}  // namespace

namespace {

// --max_length / --truncation_strategy on one encoded sequence.
RowFate truncate(std::vector<int64_t>& ids, std::vector<int64_t>& labels, int64_t max_length, Truncation truncation) {
  if (max_length <= 0 || static_cast<int64_t>(ids.size()) <= max_length) return RowFate::kKept;
  const auto n = static_cast<size_t>(max_length);
  if (truncation == Truncation::kDelete) return RowFate::kTooLong;
  if (truncation == Truncation::kRight) {
    ids.resize(n);
    labels.resize(n);
  } else {
    ids.erase(ids.begin(), ids.end() - static_cast<long>(n));
    labels.erase(labels.begin(), labels.end() - static_cast<long>(n));
  }
  return RowFate::kTruncated;
}

// GRPO's prompt: the conversation without the reply the dataset may hold (its last assistant turns), opened for the
// model's reply, with no label; the row's other columns kept for the reward functions, "messages" the prompt's
// conversation. Truncated like a conversation.
RowFate encode_prompt_row(const nlohmann::json& row, const templates::Template& chat, const templates::Tools& tools,
                          int64_t max_length, Truncation truncation, Example& example, const std::string& where) {
  nlohmann::json messages = row.at("messages");
  while (!messages.empty() && messages.back().value("role", "") == "assistant") messages.erase(messages.end() - 1);
  SWIFT_CHECK(!messages.empty(), DataError, where + ": a GRPO row needs a prompt (a user turn), and this one has none",
              "give each row \"messages\" ending with the user's turn, or a \"query\"/\"problem\" column");
  Example e;
  e.input_ids = with_context(where, [&] { return chat.encode_prompt(templates::conversation_from_json(messages), std::nullopt,
                                                                    templates::PromptEnd::kAuto, &tools); });
  e.labels.assign(e.input_ids.size(), -100);
  const RowFate fate = truncate(e.input_ids, e.labels, max_length, truncation);
  if (fate == RowFate::kTooLong) return fate;
  auto columns = std::make_shared<nlohmann::json>(row);
  (*columns)["messages"] = messages;  // the prompt's conversation (a reward model scores it with the completion)
  e.columns = std::move(columns);
  example = std::move(e);
  return fate;
}

}  // namespace

RowFate encode_row(const nlohmann::json& row, const templates::Template& chat, int64_t max_length, Truncation truncation,
                   Example& example, const std::string& where) {
  const templates::Tools tools = with_context(where, [&] { return templates::row_tools(row); });
  using RowKind = templates::TemplateOptions::RowKind;
  const RowKind kind = chat.options().row_kind;
  if (kind == RowKind::kPrompt) return encode_prompt_row(row, chat, tools, max_length, truncation, example, where);
  auto enc = with_context(where, [&] { return chat.encode(templates::conversation_from_json(row.at("messages")), &tools); });
  Example e;
  e.input_ids = std::move(enc.input_ids);
  e.labels = std::move(enc.labels);
  RowFate fate = truncate(e.input_ids, e.labels, max_length, truncation);
  if (fate == RowFate::kTooLong) return fate;
  if (!has_loss(e.labels)) return RowFate::kNoLoss;
  if (kind == RowKind::kLabelledReply) {
    const nlohmann::json* label = row.contains("label") ? &row["label"] : nullptr;
    SWIFT_CHECK(label && (label->is_boolean() || (label->is_number_integer() && (*label == 0 || *label == 1))),
                DataError,
                where + ": a KTO row needs \"label\": true (a desirable reply) or false (an undesirable one)" +
                    (label ? ", got " + label->dump() : std::string()),
                "write the label as a JSON boolean, not a string");
    e.desirable = label->is_boolean() ? label->get<bool>() : label->get<int>() == 1;
  }
  const char* second = kind == RowKind::kPreferencePair ? "rejected_messages"
                       : kind == RowKind::kLabelledReply ? "kl_messages"
                                                         : nullptr;
  if (second) {
    SWIFT_CHECK(kind != RowKind::kPreferencePair || row.contains(second), DataError,
                where + ": a preference row needs a rejected reply",
                "give \"rejected_response\" (or \"rejected_messages\") next to \"messages\", or "
                "\"prompt\"/\"chosen\"/\"rejected\" columns (docs/rlhf.md)");
  }
  if (second && row.contains(second)) {
    auto other = with_context(where + (kind == RowKind::kPreferencePair ? " (rejected)" : " (KL reply)"), [&] {
      return chat.encode(templates::conversation_from_json(row.at(second)), &tools);
    });
    e.rejected_input_ids = std::move(other.input_ids);
    e.rejected_labels = std::move(other.labels);
    const RowFate side = truncate(e.rejected_input_ids, e.rejected_labels, max_length, truncation);
    if (side == RowFate::kTooLong) return side;
    if (!has_loss(e.rejected_labels)) return RowFate::kNoLoss;
    if (side == RowFate::kTruncated) fate = side;
  }
  if (kind == RowKind::kPreferencePair && row.contains("margin") && !row["margin"].is_null()) {
    SWIFT_CHECK(row["margin"].is_number(), DataError, where + ": \"margin\" must be a number",
                "e.g. \"margin\": 0.5 (how much more the chosen reply is preferred)");
    e.margin = row["margin"].get<double>();
  }
  example = std::move(e);
  return fate;
}

void count_fate(EncodeReport& report, RowFate fate) {
  ++report.rows;
  switch (fate) {
    case RowFate::kTooLong: ++report.deleted_too_long; return;
    case RowFate::kNoLoss: ++report.deleted_no_loss; return;
    case RowFate::kTruncated: ++report.truncated; break;
    case RowFate::kKept: break;
  }
  ++report.kept;
}

std::vector<Example> encode_rows(const std::vector<nlohmann::json>& rows, const templates::Template& chat,
                                 int64_t max_length, Truncation truncation, EncodeReport& report,
                                 const std::string& what, int num_threads) {
  // Rows are encoded in contiguous chunks, one per thread (the tokenizer and template are thread-safe); the
  // results, the report and the first error (by row order) are the same whatever the thread count.
  std::vector<Example> encoded(rows.size());
  std::vector<RowFate> fate(rows.size(), RowFate::kKept);
  std::vector<std::exception_ptr> errors(rows.size());
  auto work = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      try {
        fate[i] = encode_row(rows[i], chat, max_length, truncation, encoded[i], what + " row " + std::to_string(i + 1));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t threads = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(num_threads, 1)), rows.size() / 64 + 1));
  std::vector<std::thread> pool;
  const size_t chunk = (rows.size() + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, std::min(rows.size(), t * chunk), std::min(rows.size(), (t + 1) * chunk));
  work(0, std::min(rows.size(), chunk));
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);

  std::vector<Example> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    count_fate(report, fate[i]);
    if (fate[i] == RowFate::kKept || fate[i] == RowFate::kTruncated) out.push_back(std::move(encoded[i]));
  }
  SWIFT_CHECK(!out.empty() || rows.empty(), DataError, what + ": no row is left to train on (" + report.summary() + ")",
              "raise --max_length, use --truncation_strategy left|right, or check the rows have assistant replies");
  return out;
}

}  // namespace swift::data
