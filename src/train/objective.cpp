// What every objective shares (see objective.h): the pipeline stage's forward, and running the frozen passes.
#include "swift/train/objective.h"

#include <ATen/core/grad_mode.h>

#include "swift/distributed/parallel_strategy.h"
#include "swift/model/autocast.h"
#include "swift/train/causal_lm_objective.h"

namespace swift::train {

StageResult TrainingObjective::stage_output(model::CausalLM& policy, const data::Batch& batch) {
  return policy->forward_hidden(forward_args(batch, policy->device()));
}

namespace {

// One frozen pass over the micro-batches, as the strategy runs them: a stage before the last sends its hidden
// states on, the last keeps the result (nothing to run backward on).
class FrozenPass : public distributed::MicroBatches {
 public:
  FrozenPass(TrainingObjective& objective, model::CausalLM& policy, const std::vector<const data::Batch*>& batches,
             int pass, std::optional<c10::ScalarType> autocast)
      : objective_(objective), policy_(policy), batches_(batches), pass_(pass), autocast_(autocast) {}
  size_t size() const override { return batches_.size(); }
  bool present(size_t k) const override { return batches_[k] != nullptr; }
  at::Tensor loss(size_t k) override {  // the head under the job's autocast too, as compute() runs the policy's
    model::AutocastScope scope(policy_->device().type(), autocast_);
    objective_.keep_frozen(pass_, policy_, *batches_[k], objective_.frozen_hidden(pass_, policy_, *batches_[k]));
    return {};
  }
  at::Tensor stage_output(size_t k) override {
    model::AutocastScope scope(policy_->device().type(), autocast_);
    return objective_.frozen_hidden(pass_, policy_, *batches_[k]);
  }

 private:
  TrainingObjective& objective_;
  model::CausalLM& policy_;
  const std::vector<const data::Batch*>& batches_;
  int pass_;
  std::optional<c10::ScalarType> autocast_;
};

}  // namespace

void run_frozen_passes(TrainingObjective& objective, model::CausalLM& policy, distributed::ParallelStrategy& parallel,
                       const std::vector<const data::Batch*>& batches, std::optional<c10::ScalarType> autocast) {
  at::NoGradGuard no_grad;
  for (int pass = 0; pass < objective.frozen_passes(); ++pass) {
    FrozenPass micro_batches(objective, policy, batches, pass, autocast);
    parallel.run_micro_batches(micro_batches, /*backward=*/false);
  }
}

}  // namespace swift::train
