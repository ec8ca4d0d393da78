// The causal language-modelling loss: token t predicts token t+1; labels of -100 carry no loss.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>

namespace swift::model {
class TensorParallelComm;
}

namespace swift::train {

// Logits split over a tensor-parallel group: each rank's hold the vocabulary [vocab_start, vocab_start + V/size)
// (model/tensor_parallel.h). Null comm: whole logits.
struct VocabSplit {
  model::TensorParallelComm* comm = nullptr;
  int64_t vocab_start = 0;
};

struct LossSums {
  at::Tensor loss_sum;    // scalar fp32: the summed cross entropy over label tokens (differentiable)
  int64_t tokens = 0;     // label tokens counted
  int64_t correct = 0;    // of which the argmax was right (token_acc)
};

// logits: [B, T, V]; labels: [B, T]. Sums (not means) so a step can normalise by the label tokens of the
// whole accumulated batch, which makes k micro-batches of b equal one batch of k*b.
LossSums causal_lm_loss_sums(const at::Tensor& logits, const at::Tensor& labels);

// The same sums from the final hidden states [B, T, C], computing logits (`lm_head`: [N, C] -> [N, V]) only at
// the positions that predict a label. With large vocabularies the output layer dominates a small model's
// step, and prompts carry no loss, so this saves most of that work and its memory (ms-swift's
// use_logits_to_keep does the same). Equal to causal_lm_loss_sums(lm_head(hidden), labels).
// With `split`, lm_head gives this rank's vocabulary slice and the sums are the whole vocabulary's.
// `labels_shifted`: labels[t] is already position t's target (a context-parallel share of the rows).
LossSums causal_lm_loss_sums_from_hidden(const at::Tensor& hidden, const at::Tensor& labels,
                                         const std::function<at::Tensor(const at::Tensor&)>& lm_head,
                                         VocabSplit split = {}, bool labels_shifted = false);

}  // namespace swift::train
