// The causal LM objective of sft and pt (see causal_lm_objective.h).
#include "swift/train/causal_lm_objective.h"

#include <ATen/ATen.h>

#include "swift/data/packing.h"
#include "swift/train/loss.h"

namespace swift::train {

model::ForwardArgs forward_args(const data::Batch& batch, c10::Device device) {
  model::ForwardArgs args;
  args.input_ids = batch.input_ids.to(device);
  if (batch.position_ids.defined()) args.position_ids = batch.position_ids.to(device);
  if (batch.segment_ids.defined()) args.segment_ids = batch.segment_ids.to(device);
  return args;
}

namespace {

class CausalLmObjective : public TrainingObjective {
 public:
  explicit CausalLmObjective(bool padding_free) : padding_free_(padding_free) {}
  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    if (!padding_free_ || items.size() < 2) return data::collate(items, pad_id);
    const data::Example row = data::pack_row(items);
    return data::collate({&row}, pad_id);
  }
  double units(const data::Batch& batch) const override { return static_cast<double>(batch.label_tokens); }
  std::vector<std::string> metric_names() const override { return {"loss", "token_acc"}; }
  MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    auto sums = causal_lm_loss_sums_from_hidden(policy->forward_hidden(forward_args(batch, policy->device())),
                                                batch.labels, [&](const at::Tensor& h) { return policy->logits(h); },
                                                VocabSplit{policy->tensor_parallel(), policy->vocab_start()},
                                                batch.labels_shifted);
    const auto tokens = static_cast<double>(sums.tokens);
    const at::Tensor loss = sums.loss_sum.detach().to(at::kDouble).reshape({1});
    const at::Tensor rest = at::tensor({tokens, static_cast<double>(sums.correct), tokens}, loss.options());
    return {sums.loss_sum, at::cat({loss, rest}).view({2, 2})};
  }

 private:
  bool padding_free_;
};

}  // namespace

std::unique_ptr<TrainingObjective> causal_lm_objective(bool padding_free) {
  return std::make_unique<CausalLmObjective>(padding_free);
}

}  // namespace swift::train
