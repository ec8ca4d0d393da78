// GKD's objective (see gkd_objective.h).
#include "swift/rlhf/gkd_objective.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/core/error.h"
#include "swift/data/batch.h"
#include "swift/rlhf/gkd_loss.h"
#include "swift/rlhf/grpo_loss.h"
#include "swift/train/causal_lm_objective.h"
#include "swift/tuners/lora.h"

namespace swift::rlhf {

namespace {

// Rows of logits computed at once: [rows x vocabulary] for the student and the teacher (ms-swift's chunk).
constexpr int64_t kChunkRows = 512;

// The final hidden states [B, T, C] at the positions that predict a reply token: [N, C].
at::Tensor reply_positions(const at::Tensor& hidden, const at::Tensor& labels) {
  const at::Tensor mask = completion_mask(labels).to(hidden.device());
  return hidden.narrow(1, 0, hidden.size(1) - 1).index({mask});
}

class GkdObjective : public train::TrainingObjective {
 public:
  GkdObjective(const GkdOptions& options, model::CausalLM teacher, std::shared_ptr<const GkdSources> sources)
      : o_(options), teacher_(std::move(teacher)), sources_(std::move(sources)) {}

  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    data::Batch b = data::collate(items, pad_id);
    b.rollout_round = items.empty() ? -1 : items.front()->rollout_round;  // a micro-batch never spans two
    return b;
  }
  double units(const data::Batch&) const override { return 1.0; }  // a mean over each micro-batch's reply tokens
  std::vector<std::string> metric_names() const override { return {"loss"}; }
  int64_t extra_weight_bytes() const override {
    int64_t bytes = 0;
    if (teacher_)
      for (const auto& p : teacher_->parameters()) bytes += static_cast<int64_t>(p.nbytes());
    return bytes;
  }

  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    const model::ForwardArgs args = train::forward_args(batch, policy->device());
    // The teacher's pass first, inside the micro-batch (as ms-swift's compute_loss): only this micro-batch's teacher
    // states are ever held.
    at::Tensor teacher_h;
    {
      torch::NoGradGuard no_grad;
      if (teacher_) {
        teacher_h = reply_positions(teacher_->forward_hidden(args), batch.labels);
      } else {
        tuners::AdaptersDisabled base(policy);
        teacher_h = reply_positions(policy->forward_hidden(args), batch.labels);
      }
    }
    const at::Tensor hidden = policy->forward_hidden(args);
    const at::Tensor student_h = reply_positions(hidden, batch.labels);
    const int64_t n = student_h.size(0);
    at::Tensor total = hidden.new_zeros({}, hidden.options().dtype(at::kFloat));
    for (int64_t start = 0; start < n; start += kChunkRows) {
      const int64_t rows = std::min(kChunkRows, n - start);
      at::Tensor teacher_logits;
      {
        torch::NoGradGuard no_grad;
        const at::Tensor h = teacher_h.narrow(0, start, rows);
        if (teacher_) {
          teacher_logits = teacher_->logits(h);
        } else {
          tuners::AdaptersDisabled base(policy);  // an adapted head too
          teacher_logits = policy->logits(h);
        }
      }
      total = total + generalized_jsd_sum(policy->logits(student_h.narrow(0, start, rows)), teacher_logits, o_.beta, o_.temperature);
    }
    at::Tensor loss = n > 0 ? total / static_cast<double>(n) : hidden.sum().to(at::kFloat) * 0;  // still in the graph
    const auto source = sources_->student_by_round.find(batch.rollout_round);
    const bool student = source != sources_->student_by_round.end() && source->second;
    if (o_.sft_alpha > 0 && !student && n > 0) {
      // transformers' causal LM loss on the dataset's reply: the mean cross-entropy of its tokens.
      const at::Tensor logps = token_logps_from_hidden(hidden, batch.labels, [&](const at::Tensor& h) { return policy->logits(h); }, 1.0);
      const at::Tensor mask = completion_mask(batch.labels).to(logps.device());
      loss = loss + o_.sft_alpha * (-(logps * mask).sum() / mask.sum());
    }
    const at::Tensor row = at::stack({loss.detach().to(at::kDouble), at::ones({}, loss.options().dtype(at::kDouble))});
    return {loss, row.unsqueeze(0), at::Tensor()};
  }

 private:
  GkdOptions o_;
  model::CausalLM teacher_;
  std::shared_ptr<const GkdSources> sources_;
};

}  // namespace

std::unique_ptr<train::TrainingObjective> gkd_objective(const GkdOptions& options, model::CausalLM teacher,
                                                        std::shared_ptr<const GkdSources> sources) {
  return std::make_unique<GkdObjective>(options, std::move(teacher), std::move(sources));
}

}  // namespace swift::rlhf
