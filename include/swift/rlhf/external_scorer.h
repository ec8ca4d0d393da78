// What the reward functions outside swift share (an external command, an HTTP endpoint; reward_functions.h): the
// JSON line each completion is sent as, the answer read back (one reward or null per completion), and the policy on
// failures: a batch that gets no answer costs a warning and its rewards (counted 0), the third in a row stops the
// run.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "swift/rlhf/reward_functions.h"

namespace swift::rlhf {

// Why a batch got no rewards from a scorer.
struct ScorerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One JSON object per completion, a line each: the row's columns, "messages" ending with the completion as the
// assistant's reply (as ms-swift's reward functions receive it), "completion" and "completion_tokens".
std::string scorer_input(const std::vector<ScoredCompletion>& batch);

// `n` rewards from the answer's lines (each a number or null); ScorerFailure naming the line otherwise.
std::vector<std::optional<double>> parse_scorer_answer(const std::vector<std::string>& lines, size_t n);

// Counts a scorer's failures in a row: failed() warns and returns no rewards for the batch, or, the third time,
// throws DataError; succeeded() resets the count.
class ScorerFailures {
 public:
  // what: how messages name the scorer ("the reward command `...`"); name: its metrics' name; how: what to try.
  ScorerFailures(std::string what, std::string name, std::string how)
      : what_(std::move(what)), name_(std::move(name)), how_(std::move(how)) {}
  std::vector<std::optional<double>> failed(const ScorerFailure& e, size_t n, const std::string& next);
  void succeeded() { in_a_row_ = 0; }

 private:
  static constexpr int kBeforeStopping = 3;
  std::string what_, name_, how_;
  int in_a_row_ = 0;
};

}  // namespace swift::rlhf
