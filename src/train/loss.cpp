// Shifted cross entropy summed over label tokens.
#include "swift/train/loss.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/model/tensor_parallel.h"

namespace swift::train {

LossSums causal_lm_loss_sums(const at::Tensor& logits, const at::Tensor& labels) {
  const int64_t T = logits.size(1), V = logits.size(2);
  auto shift_logits = logits.narrow(1, 0, T - 1).reshape({-1, V}).to(at::kFloat);
  auto shift_labels = labels.narrow(1, 1, T - 1).reshape({-1}).to(logits.device());
  LossSums out;
  out.loss_sum = at::cross_entropy_loss(shift_logits, shift_labels, /*weight=*/{}, at::Reduction::Sum, -100);
  torch::NoGradGuard no_grad;
  auto mask = shift_labels.ne(-100);
  out.tokens = mask.sum().item<int64_t>();
  out.correct = shift_logits.argmax(-1).eq(shift_labels).logical_and(mask).sum().item<int64_t>();
  return out;
}

LossSums causal_lm_loss_sums_from_hidden(const at::Tensor& hidden, const at::Tensor& labels,
                                         const std::function<at::Tensor(const at::Tensor&)>& lm_head,
                                         VocabSplit split, bool labels_shifted) {
  const int64_t T = hidden.size(1), predicting = labels_shifted ? T : T - 1;
  auto shift_labels = (labels_shifted ? labels : labels.narrow(1, 1, T - 1)).to(hidden.device());
  auto mask = shift_labels.ne(-100);                                       // [B, T-1]
  auto selected = hidden.narrow(1, 0, predicting).index({mask});          // [N, C]
  auto targets = shift_labels.index({mask});                              // [N]
  auto logits = lm_head(selected).to(at::kFloat);                         // [N, V]
  LossSums out;
  out.loss_sum = split.comm ? model::vocab_parallel_cross_entropy_sum(logits, targets, split.vocab_start, *split.comm)
                            : at::cross_entropy_loss(logits, targets, /*weight=*/{}, at::Reduction::Sum, -100);
  torch::NoGradGuard no_grad;
  out.tokens = targets.size(0);
  const auto predicted = split.comm ? model::vocab_parallel_argmax(logits, split.vocab_start, *split.comm) : logits.argmax(-1);
  out.correct = predicted.eq(targets).sum().item<int64_t>();
  return out;
}

}  // namespace swift::train
