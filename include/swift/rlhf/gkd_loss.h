// GKD's loss (on-policy distillation, Agarwal et al. 2023), as ms-swift 4.6's gkd_loss and TRL's
// GKDTrainer.generalized_jsd_loss compute it: at each completion token, the generalised Jensen-Shannon divergence
// between the student's and the teacher's next-token distributions, both at temperature T:
//   beta = 0: KL(teacher || student) (forward KL); beta = 1: KL(student || teacher) (reverse KL);
//   else, with M = (1 - beta) student + beta teacher: beta KL(teacher || M) + (1 - beta) KL(student || M).
// The loss of a micro-batch is its sum over the completion tokens divided by their count.
#pragma once

#include <ATen/core/Tensor.h>

namespace swift::rlhf {

// student_logits, teacher_logits: [N, V] (float32) at the positions that predict the N completion tokens. A teacher
// with another vocabulary size is aligned as ms-swift does (the shorter side takes the other's logits beyond its
// vocabulary). The divergence summed over the N positions (a scalar; differentiable in the student's logits).
at::Tensor generalized_jsd_sum(const at::Tensor& student_logits, const at::Tensor& teacher_logits, double beta,
                               double temperature);

}  // namespace swift::rlhf
