// The causal language-modelling loss: token t predicts token t+1; labels of -100 carry no loss.
#pragma once

#include <ATen/core/Tensor.h>

namespace swift::train {

struct LossSums {
  at::Tensor loss_sum;    // scalar fp32: the summed cross entropy over label tokens (differentiable)
  int64_t tokens = 0;     // label tokens counted
  int64_t correct = 0;    // of which the argmax was right (token_acc)
};

// logits: [B, T, V]; labels: [B, T]. Sums (not means) so a step can normalise by the label tokens of the
// whole accumulated batch, which makes k micro-batches of b equal one batch of k*b.
LossSums causal_lm_loss_sums(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace swift::train
