// Data parallelism with every rank holding the whole model (PyTorch's DDP), optionally with ZeRO-1 (each rank keeps
// the optimizer state of its share of the trainable parameters and broadcasts their new values) or ZeRO-2 (each
// gradient is also reduced to its owner after every micro-batch and dropped elsewhere). Every rank starts from
// rank 0's weights; gradients are exchanged in buckets that overlap the backward (gradient_sync.h).
#pragma once

#include <optional>
#include <vector>

#include "swift/distributed/gradient_sync.h"
#include "swift/distributed/parallel_strategy.h"

namespace swift::distributed {

class DataParallel : public ParallelStrategy {
 public:
  // `zero.stage`: 0 (DDP), 1 or 2.
  DataParallel(std::unique_ptr<ProcessGroup> group, std::string device, ZeroConfig zero);

  void assign_ownership(model::CausalLM& model) override;
  void begin_training(model::CausalLM& model) override;
  void before_backward(bool last_of_step) override;
  void end_micro_batch(bool last_of_step) override;
  void skip_micro_batch(bool last_of_step) override;
  void finish_gradients(bool first_step) override;
  double clip_gradients(double max_norm, bool& overflow) override;
  void after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) override;
  void end_training() override { log_time_in_collectives({group_.get()}); }
  bool shards_optimizer_state() const override { return zero_.stage > 0; }

 private:
  bool reduces_to_owners() const { return zero_.stage == 2; }  // gradients sharded between micro-batches
  std::vector<int> owners_;  // ZeRO-1/2: the rank owning each trainable parameter
  std::optional<GradientSync> sync_;
};

}  // namespace swift::distributed
