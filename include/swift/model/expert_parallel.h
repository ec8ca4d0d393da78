// Expert parallelism inside the model (Megatron's --expert_model_parallel_size): the ranks of an expert-parallel
// group each hold num_experts / ep of every sparse layer's experts (rank r: experts [r E/ep, (r + 1) E/ep)) and
// send tokens to the experts instead of gathering weights. In a sparse layer each rank routes its own tokens (the
// router is replicated), sends every (token, choice) row to the rank holding its expert (an all-to-all of uneven
// sizes), runs its experts over the rows it received from all ranks as one grouped product, and sends the outputs
// back (the reverse all-to-all), where they are weighted and summed exactly as without the split. Backward runs the
// two exchanges the other way. This is Megatron-Core's "alltoall" token dispatcher without a capacity factor
// (dropless: no token is dropped, so the numbers are one rank's).
// The group itself is the distributed area's (ExpertParallelComm is how the model sees it).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "swift/model/expert_weights.h"  // is_expert_parameter: the parameters it splits
#include "swift/model/tensor_parallel.h"

namespace swift::model {

class ExpertParallelComm {
 public:
  virtual ~ExpertParallelComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rows (dim 0) of `rows` to the ranks in order: send_rows[r] consecutive rows to rank r. Returns the rows
  // received, receive_rows[r] from rank r, in rank order. Not differentiable (exchange_with_experts is).
  virtual at::Tensor all_to_all(const at::Tensor& rows, const std::vector<int64_t>& send_rows,
                                const std::vector<int64_t>& receive_rows) = 0;
};

// A sparse layer's place in the group.
struct ExpertParallel {
  std::shared_ptr<ExpertParallelComm> comm;
  int64_t num_experts = 0;  // the layer's, over all ranks
  int64_t local_experts() const { return num_experts / comm->size(); }
  int64_t first_expert() const { return comm->rank() * local_experts(); }
};

// What keeps `config`'s experts from being split over `size` ranks ("" when nothing).
std::string expert_parallel_problem(const ModelConfig& config, int size);

// Keeps this rank's experts of every sparse layer (in place, as tensor parallelism keeps its slices: shape-only
// parameters, another stage's or read later, take the smaller shape) and routes the layers' tokens through the group.
// Returns the split parameters (dim 0, the experts). UsageError when the experts do not divide.
std::vector<ShardedParameter> apply_expert_parallel(CausalLM& model, std::shared_ptr<ExpertParallelComm> comm);

// The experts' part of a sparse layer across the group: `rows` [M, C] are this rank's (token, choice) rows sorted by
// expert, counts [E] how many go to each of the E experts. Each rank's rows travel to the rank of their expert,
// `run_local(rows, offsets)` computes this rank's experts over the rows it received grouped by expert (offsets
// [E / ep] int32: each group's end), and the outputs come back. Returns [M, C'] in `rows`' order. Differentiable.
at::Tensor exchange_with_experts(const at::Tensor& rows, const at::Tensor& counts, const ExpertParallel& group,
                                 const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& run_local);

}  // namespace swift::model
