// GKD's training data (see gkd_rollout.h).
#include "swift/rlhf/gkd_rollout.h"

#include <algorithm>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/python_random.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/rlhf/rollout_generation.h"

namespace swift::rlhf {

namespace {

class GkdData : public data::TrainData {
 public:
  GkdData(std::unique_ptr<data::TrainData> rows, GkdSetup setup) : rows_(std::move(rows)), s_(std::move(setup)) {
    steps_per_generation_ = s_.options.steps_per_generation > 0 ? s_.options.steps_per_generation : s_.accumulation;
    log_info("gkd: each generation batch: ", steps_per_generation_, " micro-batch", steps_per_generation_ > 1 ? "es" : "",
             ", the student's own completions with probability --lmbda ", s_.options.lmbda);
  }

  std::vector<const data::Example*> next_micro_batch() override {
    if (position_ % steps_per_generation_ == 0) draw_generation_batch();
    const auto k = static_cast<size_t>(position_ % steps_per_generation_);
    ++position_;
    std::vector<const data::Example*> out;
    for (const auto& e : batch_[k]) out.push_back(&e);
    return out;
  }
  std::optional<int64_t> batches_per_epoch() const override { return rows_->batches_per_epoch(); }
  int64_t epoch() const override { return rows_->epoch(); }
  std::string report() const override { return rows_->report(); }
  nlohmann::json state() const override {
    // At a generation batch's start: the rows' state before its draws, and the micro-batches served.
    return {{"kind", "gkd"}, {"rows", position_ % steps_per_generation_ == 0 ? rows_->state() : anchor_}, {"position", position_}};
  }
  void restore(const nlohmann::json& state) override {
    SWIFT_CHECK(state.value("kind", "") == "gkd", DataError, "the checkpoint's data state is not a GKD run's (" + state.dump() + ")",
                "resume a GKD run from a checkpoint of a GKD run");
    const int64_t position = state.at("position").get<int64_t>();
    SWIFT_CHECK(position % steps_per_generation_ == 0, DataError,
                "the checkpoint was saved inside a GKD generation batch (micro-batch " +
                    std::to_string(position % steps_per_generation_) + " of " + std::to_string(steps_per_generation_) + ")",
                "resume from a checkpoint saved at a generation batch's end (with --steps_per_generation unset, every "
                "checkpoint is one)");
    rows_->restore(state.at("rows"));
    position_ = position;
  }

 private:
  void draw_generation_batch() {
    anchor_ = rows_->state();
    const int64_t round = position_ / steps_per_generation_;
    const int64_t step = position_ / s_.accumulation;  // ms-swift's global_step when the batch is drawn
    const bool student = python_random_first(s_.seed + static_cast<uint64_t>(step)) <= s_.options.lmbda;
    (*s_.sources).student_by_round[round] = student;
    // A step's micro-batches are all drawn before any is trained on: keep every round a step can span.
    const auto kept = static_cast<size_t>(s_.accumulation / steps_per_generation_ + 4);
    while (s_.sources->student_by_round.size() > kept) s_.sources->student_by_round.erase(s_.sources->student_by_round.begin());
    batch_.assign(static_cast<size_t>(steps_per_generation_), {});
    for (auto& micro : batch_) {
      for (const data::Example* e : rows_->next_micro_batch()) micro.push_back(*e);
      for (auto& e : micro) e.rollout_round = round;
    }
    if (student) answer_as_student(round);
  }

  // This rank's rows of the batch: their replies replaced by the student's completions of their prompts.
  void answer_as_student(int64_t round) {
    std::vector<data::Example*> mine;
    std::vector<int64_t> global_rows;  // each row's place in the generation batch (its seed)
    int64_t offset = 0;
    for (auto& micro : batch_) {
      const auto [lo, hi] = s_.parallel->local_range(micro.size());
      for (size_t i = lo; i < hi; ++i) {
        mine.push_back(&micro[i]);
        global_rows.push_back(offset + static_cast<int64_t>(i));
      }
      offset += static_cast<int64_t>(micro.size());
    }
    std::vector<std::vector<int64_t>> prompts;
    for (const data::Example* e : mine) {
      const auto first_label = std::find_if(e->labels.begin(), e->labels.end(), [](int64_t l) { return l != -100; });
      prompts.emplace_back(e->input_ids.begin(), e->input_ids.begin() + (first_label - e->labels.begin()));
    }
    const GkdOptions& o = s_.options;
    model::SamplingParams params = rollout_sampling(o, s_.stop_token_ids);
    for (const int64_t row : global_rows) params.row_seeds.push_back(generation_seed(s_.seed, round, row));
    const std::vector<GeneratedCompletion> completions = generate_completions(s_.policy, prompts, params, s_.autocast);
    for (size_t r = 0; r < mine.size(); ++r) {
      data::Example& e = *mine[r];
      e.input_ids = prompts[r];
      e.labels.assign(prompts[r].size(), -100);
      e.input_ids.insert(e.input_ids.end(), completions[r].tokens.begin(), completions[r].tokens.end());
      e.labels.insert(e.labels.end(), completions[r].tokens.begin(), completions[r].tokens.end());
    }
  }

  std::unique_ptr<data::TrainData> rows_;
  GkdSetup s_;
  int64_t steps_per_generation_ = 1;
  int64_t position_ = 0;                         // micro-batches served
  nlohmann::json anchor_;                        // the rows' state before the current generation batch's draws
  std::vector<std::vector<data::Example>> batch_;  // the current generation batch's global micro-batches
};

}  // namespace

std::unique_ptr<data::TrainData> gkd_data(std::unique_ptr<data::TrainData> rows, GkdSetup setup) {
  return std::make_unique<GkdData>(std::move(rows), std::move(setup));
}

}  // namespace swift::rlhf
