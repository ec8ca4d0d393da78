// One optimizer step (see training_step.h).
#include "swift/train/training_step.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>

#include "swift/model/autocast.h"

namespace swift::train {

namespace {

// The output of a pipeline stage unchanged, whose backward also runs `loss`'s (a stage's own term of the loss, as
// Megatron-Core's MoEAuxLossAutoScaler attaches the routers' load-balancing loss to the layer's output).
struct WithLossInBackward : torch::autograd::Function<WithLossInBackward> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& output, const at::Tensor& loss) {
    ctx->save_for_backward({loss.detach()});  // a scalar: its dtype and device for the gradient
    return output.view_as(output);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {grads[0], at::ones_like(ctx->get_saved_variables()[0])};
  }
};

// This rank's micro-batches of the step, collated; nullopt where a short last batch left it nothing and the
// strategy lets it sit out (else it runs another rank's first sample, `stand_in`, whose loss counts 0).
struct LocalMicroBatch {
  std::optional<data::Batch> batch;
  bool stand_in = false;
};

std::vector<LocalMicroBatch> draw(StepContext& c, data::TrainData& data, int64_t micro_batches, double& units) {
  std::vector<LocalMicroBatch> out;
  for (int64_t k = 0; k < micro_batches; ++k) {
    const auto global = data.next_micro_batch();
    const auto [begin, end] = c.parallel.local_range(global.size());
    const std::vector<const data::Example*> items(global.begin() + static_cast<std::ptrdiff_t>(begin),
                                                  global.begin() + static_cast<std::ptrdiff_t>(end));
    LocalMicroBatch& local = out.emplace_back();
    local.stand_in = items.empty() && c.parallel.computes_empty_slices();
    if (items.empty() && !local.stand_in) continue;
    local.batch = c.parallel.local_sequences(
        c.objective.collate(local.stand_in ? std::vector<const data::Example*>{global.front()} : items, c.pad_id));
    if (!local.stand_in) units += c.objective.units(*local.batch);
  }
  return out;
}

// The step's micro-batches as the strategy runs them: each one's loss normalised by the step's units, its metrics
// kept in order for the window.
class StepMicroBatches : public distributed::MicroBatches {
 public:
  StepMicroBatches(StepContext& c, const std::vector<LocalMicroBatch>& local, double units)
      : c_(c), local_(local), units_(units), metrics_(local.size()) {}
  size_t size() const override { return local_.size(); }
  bool present(size_t k) const override { return local_[k].batch.has_value(); }
  at::Tensor loss(size_t k) override {
    MicroBatchResult result;
    {
      model::AutocastScope autocast(c_.model->device().type(), c_.autocast);
      result = c_.objective.compute(c_.model, *local_[k].batch);
    }
    at::Tensor loss = result.loss / std::max(units_, 1e-12);
    if (result.unnormalised_loss.defined()) {
      loss = loss + result.unnormalised_loss;
      // The logged loss (summed, then divided by the units) holds it as it is too.
      result.metrics = result.metrics.clone();
      result.metrics[0][0] += result.unnormalised_loss.detach().to(at::kDouble) * units_;
    }
    if (local_[k].stand_in) loss = loss * 0.0;  // takes part in the collectives, changes no gradient
    else add_metrics(k, result.metrics);
    return c_.scaler ? c_.scaler->scale(loss) : loss;
  }
  at::Tensor stage_output(size_t k) override {
    StageResult stage;
    {
      model::AutocastScope autocast(c_.model->device().type(), c_.autocast);
      stage = c_.objective.stage_output(c_.model, *local_[k].batch);
    }
    if (!local_[k].stand_in) add_metrics(k, stage.metrics);
    if (!stage.loss.defined() || !stage.loss.requires_grad()) return stage.output;
    at::Tensor loss = stage.loss / std::max(units_, 1e-12);
    if (local_[k].stand_in) loss = loss * 0.0;
    return WithLossInBackward::apply(stage.output, c_.scaler ? c_.scaler->scale(loss) : loss);
  }
  // After the backward passes were queued: the metrics in one copy each.
  void add_metrics(MetricWindow& window) const {
    for (const auto& m : metrics_)
      if (m.defined()) window.add(m);
  }

 private:
  // Under interleaved pipeline parallelism a rank runs a stage before the last and the last: both report.
  void add_metrics(size_t k, const at::Tensor& m) {
    if (m.defined()) metrics_[k] = metrics_[k].defined() ? metrics_[k] + m.to(metrics_[k].device()) : m;
  }
  StepContext& c_;
  const std::vector<LocalMicroBatch>& local_;
  double units_;
  std::vector<at::Tensor> metrics_;
};

}  // namespace

StepResult train_step(StepContext& c, data::TrainData& data, int64_t micro_batches, double lr, bool first_step,
                      MetricWindow& window) {
  // The loss is normalised by the units (sft: label tokens) of every rank's micro-batches of this step: the summed
  // gradients are then those of one process on the global batch.
  double units = 0;
  const std::vector<LocalMicroBatch> local = draw(c, data, micro_batches, units);
  units = c.parallel.sum({units})[0];
  if (c.objective.frozen_passes() > 0) {  // the reference's passes first (preference objectives)
    std::vector<const data::Batch*> frozen;
    for (const auto& b : local) frozen.push_back(b.batch ? &*b.batch : nullptr);
    c.parallel.begin_forward_only();
    run_frozen_passes(c.objective, c.model, c.parallel, frozen, c.autocast);
    c.parallel.end_forward_only();
  }
  StepMicroBatches batches(c, local, units);
  c.parallel.run_micro_batches(batches, /*backward=*/true);
  batches.add_metrics(window);
  c.parallel.finish_gradients(first_step);

  // float16: gradients back to their true size before clipping; an overflow on any rank skips the update (as the
  // Trainer), the schedule moves on and the scale backs off.
  bool overflow = c.scaler && c.scaler->unscale(c.parallel.trainable());
  StepResult result;
  result.grad_norm = c.parallel.clip_gradients(c.max_grad_norm, overflow);
  // A gradient that is not finite (NaN or inf: a diverged loss, a bad batch) would write NaN into every weight it
  // touches: skipped as a float16 overflow is. The norm is every rank's gradients', so every rank skips alike.
  overflow = overflow || !std::isfinite(result.grad_norm);
  if (c.scaler) c.scaler->set_overflow(overflow);
  result.skipped = overflow;
  c.optimizer.set_lr(lr);
  c.parallel.before_optimizer_step();
  if (!overflow) c.optimizer.step();
  std::vector<at::Tensor> state;
  if (first_step)
    for (const auto& [name, t] : c.optimizer.state_tensors()) state.push_back(t);
  c.parallel.after_optimizer_step(!overflow, first_step, state);
  for (const auto& p : c.parallel.trainable())
    if (p.grad().defined()) p.mutable_grad().reset();  // every gradient: sharded optimizers see only their own
  if (c.scaler) c.scaler->update();
  return result;
}

}  // namespace swift::train
