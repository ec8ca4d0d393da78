// ZeRO-3 as a strategy: each parameter's values live on one rank, which alone reads them from the files, keeps its
// optimizer state and updates it. The model gathers each decoder layer (and the embedding and head, where
// model::gathered_around_use says so) around each use through Zero3Sharding and reduces their gradients inside the
// backward; this strategy gathers the other outer parameters (final norm, a tied embedding, a score head, adapters
// on the head) for each micro-batch, evaluation and save, and reduces their gradients to their owners.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swift/distributed/gradient_sync.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/distributed/zero3.h"

namespace swift::distributed {

// ZeRO-3's owners by parameter name. The loaded parameters get theirs when the loader lists them, so each rank
// reads only its own share from the files; those made after loading (LoRA, a score head) theirs afterwards, each
// to the least-loaded rank. The same on every rank.
class Zero3Owners {
 public:
  explicit Zero3Owners(int world_size) : partition_(world_size) {}
  // The loader's plan for this rank: its own parameters on the device, or in CPU RAM with offload_param; those
  // the command removes after loading (`removed`) are read by no rank.
  model::PlacementPlan plan(int rank, bool offload_param, std::vector<std::string> removed);
  // Every parameter's owner (names and bytes in model order): the loaded ones keep theirs, the others go one by one
  // to the least-loaded rank. Loaded parameters the model no longer has (a reward model's lm_head) are taken off
  // their owner's load first. Without a plan (a model loaded whole) all of them, largest first.
  std::vector<int> owners(const std::vector<std::string>& names, const std::vector<int64_t>& bytes);

 private:
  ParameterPartition partition_;
  std::map<std::string, std::pair<int, int64_t>> loaded_;  // name -> (owner, bytes) as the loader read them
};

class Zero3Strategy : public ParallelStrategy {
 public:
  Zero3Strategy(std::unique_ptr<ProcessGroup> group, std::string device, ZeroConfig zero);
  ~Zero3Strategy() override;

  bool computes_empty_slices() const override { return true; }
  model::PlacementPlan placement_plan(const std::vector<std::string>& removed) override;
  bool shards_parameters() const override { return true; }
  void assign_ownership(model::CausalLM& model) override;
  ParallelFootprint footprint(model::CausalLM& model) const override;

  void begin_training(model::CausalLM& model) override;
  void begin_micro_batch(bool last_of_step) override;
  void end_micro_batch(bool last_of_step) override;
  double clip_gradients(double max_norm, bool& overflow) override;
  void before_optimizer_step() override;
  void after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) override;
  void end_training() override;

  void begin_forward_only() override;
  void end_forward_only() override;
  void begin_save(bool trainable_only) override;
  void end_save() override;
  bool shards_optimizer_state() const override { return true; }

 private:
  Zero3Owners owners_by_name_;
  std::vector<int> owners_;                // of every parameter, in model order
  std::vector<at::Tensor> outer_params_;   // gathered by this strategy for each micro-batch
  std::unique_ptr<Zero3Sharding> sharding_;
  std::optional<GradientSync> sync_;       // the outer parameters' gradients, reduced to their owners
  std::vector<std::vector<at::Tensor>> save_chunks_;  // what the save in progress brings to rank 0
};

}  // namespace swift::distributed
