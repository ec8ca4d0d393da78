// Tensor parallelism (Megatron-LM's layout, model/tensor_parallel.h) over groups of --tp_size consecutive ranks,
// with data parallelism (DDP) across the groups: rank = dp_rank * tp_size + tp_rank, TP innermost. The ranks of a
// TP group train on the same samples and each holds a slice of every large weight; the DP groups (ranks with the
// same tp_rank) sum their gradients as DDP does.
//   assign_ownership: the model split (each rank keeps its slice of the loaded weights);
//   local_range / sum: over the DP group (a TP group is one data-parallel replica);
//   finish_gradients: q_norm/k_norm's partial gradients summed over the TP group, then every gradient over DP;
//   clip_gradients: the norm of the whole model (split gradients' squares summed over the TP group, replicated
//     ones counted once);
//   begin_save / end_save: the split parameters gathered whole for rank 0 to write, then sliced again;
//   optimizer state: a file per rank (its slices' moments).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swift/distributed/gradient_sync.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/model/tensor_parallel.h"

namespace swift::distributed {

class TensorParallel : public ParallelStrategy {
 public:
  // `world`: every rank of the job; its size a multiple of tp_size (checked by parallel_options).
  TensorParallel(std::unique_ptr<ProcessGroup> world, std::string device, ZeroConfig zero, int tp_size);
  ~TensorParallel() override;

  int tp_rank() const { return rank() % tp_size_; }
  int dp_rank() const { return rank() / tp_size_; }
  int dp_size() const { return world_size() / tp_size_; }

  int data_parallel_rank() const override { return dp_rank(); }
  int data_parallel_size() const override { return dp_size(); }
  std::vector<double> sum(const std::vector<double>& values) override;
  bool computes_empty_slices() const override { return true; }
  void assign_ownership(model::CausalLM& model) override;
  ParallelFootprint footprint(model::CausalLM& model) const override;
  void begin_training(model::CausalLM& model) override;
  void before_backward(bool last_of_step) override;
  void finish_gradients(bool first_step) override;
  double clip_gradients(double max_norm, bool& overflow) override;
  void after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) override;
  void end_training() override;
  void begin_save(bool trainable_only) override;
  void end_save() override;
  bool shards_optimizer_state() const override { return true; }

 protected:
  std::vector<ParameterSlice> parameter_slices() const override;

 private:
  int tp_size_;
  std::unique_ptr<ProcessGroup> tp_group_, dp_group_;  // dp_group_ null with one TP group
  std::vector<model::ShardedParameter> sharded_;
  std::vector<at::Tensor> partial_gradients_;
  std::vector<at::Tensor> split_trainable_, replicated_trainable_;  // trainable_, by whether the group splits them
  std::vector<std::pair<model::ShardedParameter*, at::Tensor>> slices_while_saving_;  // between begin_ and end_save
  std::optional<GradientSync> dp_sync_;
};

}  // namespace swift::distributed
