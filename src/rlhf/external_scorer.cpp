// The external scorers' shared protocol and failure policy (see external_scorer.h).
#include "swift/rlhf/external_scorer.h"

#include "swift/core/error.h"
#include "swift/core/logging.h"

namespace swift::rlhf {

std::string scorer_input(const std::vector<ScoredCompletion>& batch) {
  std::string input;
  for (const auto& c : batch) {
    nlohmann::json line = c.row ? *c.row : nlohmann::json::object();
    line["completion"] = c.text;
    if (line.contains("messages") && line["messages"].is_array())
      line["messages"].push_back({{"role", "assistant"}, {"content", c.text}});
    line["completion_tokens"] = c.tokens;
    input += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return input;
}

std::vector<std::optional<double>> parse_scorer_answer(const std::vector<std::string>& lines, size_t n) {
  if (lines.size() != n)
    throw ScorerFailure("it answered " + std::to_string(lines.size()) + " lines for " + std::to_string(n) + " completions");
  std::vector<std::optional<double>> rewards;
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json value = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (value.is_null() && lines[i].find("null") != std::string::npos) {
      rewards.emplace_back(std::nullopt);
    } else if (value.is_number()) {
      rewards.emplace_back(value.get<double>());
    } else {
      throw ScorerFailure("answer line " + std::to_string(i + 1) + " is not a number or null: '" + lines[i].substr(0, 80) + "'");
    }
  }
  return rewards;
}

std::vector<std::optional<double>> ScorerFailures::failed(const ScorerFailure& e, size_t n, const std::string& next) {
  ++in_a_row_;
  SWIFT_CHECK(in_a_row_ < kBeforeStopping, DataError,
              what_ + " failed " + std::to_string(in_a_row_) + " generation batches in a row; the last time: " + e.what(),
              how_ + "; the last checkpoint holds the run so far");
  log_warn(what_, ": ", e.what(), "; this generation batch has no ", name_, " rewards (counted 0)", next);
  return std::vector<std::optional<double>>(n);
}

}  // namespace swift::rlhf
