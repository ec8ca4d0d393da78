// GKD's generalised Jensen-Shannon divergence (see gkd_loss.h).
#include "swift/rlhf/gkd_loss.h"

#include <ATen/ATen.h>

#include <cmath>

namespace swift::rlhf {

namespace {

// KL(target || input) at each row, from log-probabilities: sum exp(target) (target - input).
at::Tensor kl_rows(const at::Tensor& input_log, const at::Tensor& target_log) {
  return (target_log.exp() * (target_log - input_log)).sum(-1);
}

// The side with the smaller vocabulary takes the other's logits beyond it (ms-swift's _align_vocab).
void align_vocab(at::Tensor& student, at::Tensor& teacher) {
  const int64_t s = student.size(-1), t = teacher.size(-1);
  if (s < t) student = at::cat({student, teacher.narrow(-1, s, t - s).detach()}, -1);
  if (t < s) teacher = at::cat({teacher, student.narrow(-1, t, s - t).detach()}, -1);
}

}  // namespace

at::Tensor generalized_jsd_sum(const at::Tensor& student_logits, const at::Tensor& teacher_logits, double beta,
                               double temperature) {
  at::Tensor student = student_logits.to(at::kFloat), teacher = teacher_logits.to(at::kFloat);
  if (student.size(0) == 0) return student.sum();  // no completion token: zero, still connected to the graph
  align_vocab(student, teacher);
  const at::Tensor s_log = at::log_softmax(student / temperature, -1);
  const at::Tensor t_log = at::log_softmax(teacher / temperature, -1);
  if (beta == 0) return kl_rows(s_log, t_log).sum();
  if (beta == 1) return kl_rows(t_log, s_log).sum();
  // The mixture in log space: log((1 - beta) p_s + beta p_t).
  const at::Tensor m_log = at::logsumexp(at::stack({s_log + std::log1p(-beta), t_log + std::log(beta)}), 0);
  return (beta * kl_rows(m_log, t_log) + (1 - beta) * kl_rows(m_log, s_log)).sum();
}

}  // namespace swift::rlhf
