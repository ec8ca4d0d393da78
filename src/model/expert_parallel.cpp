// Expert parallelism inside the model (see expert_parallel.h).
#include "swift/model/expert_parallel.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "swift/core/error.h"
#include "swift/model/moe.h"
#include "swift/model/param_sharding.h"

namespace swift::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The rows' exchange with its gradient: the same exchange with the sizes swapped.
struct RowsAllToAll : torch::autograd::Function<RowsAllToAll> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& rows, int64_t comm, std::vector<int64_t> send,
                            std::vector<int64_t> receive) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["send"] = send;
    ctx->saved_data["receive"] = receive;
    return reinterpret_cast<ExpertParallelComm*>(comm)->all_to_all(rows, send, receive);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* comm = reinterpret_cast<ExpertParallelComm*>(ctx->saved_data["comm"].toInt());
    const at::Tensor g = comm->all_to_all(grads[0].contiguous(), ctx->saved_data["receive"].toIntVector(),
                                          ctx->saved_data["send"].toIntVector());
    return {g, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor rows_all_to_all(const at::Tensor& rows, ExpertParallelComm& comm, const std::vector<int64_t>& send,
                           const std::vector<int64_t>& receive) {
  return RowsAllToAll::apply(rows, reinterpret_cast<int64_t>(&comm), send, receive);
}

// counts [n * per_rank] (CPU, int64) summed per run of per_rank entries.
std::vector<int64_t> sums_per_rank(const at::Tensor& counts, int n, int64_t per_rank) {
  const at::Tensor sums = counts.view({n, per_rank}).sum(1);
  return std::vector<int64_t>(sums.data_ptr<int64_t>(), sums.data_ptr<int64_t>() + n);
}

}  // namespace

std::string expert_parallel_problem(const ModelConfig& config, int size) {
  if (size <= 1) return "";
  if (!config.is_moe()) return "the model has no mixture-of-experts layers (" + config.model_type + ") to split";
  if (config.moe.num_experts % size)
    return "its " + std::to_string(config.moe.num_experts) + " experts do not divide by the expert-parallel size " +
           std::to_string(size);
  return "";
}

std::vector<ShardedParameter> apply_expert_parallel(CausalLM& model, std::shared_ptr<ExpertParallelComm> comm) {
  const std::string problem = expert_parallel_problem(model->config(), comm->size());
  SWIFT_CHECK(problem.empty(), UsageError, "--expert_model_parallel_size " + std::to_string(comm->size()) + ": " + problem,
              "choose an --expert_model_parallel_size that divides the experts, or drop it");
  auto group = std::make_shared<ExpertParallel>();
  group->comm = std::move(comm);
  group->num_experts = model->config().moe.num_experts;
  std::vector<ShardedParameter> out;
  const auto& layers = *model->model->layers;
  for (size_t i = 0; i < layers.size(); ++i) {
    auto moe = layers[i]->as<DecoderLayerImpl>()->moe;
    if (!moe) continue;
    auto& experts = *moe->experts;
    // Their LoRA branches (--target_parameters) hold every expert and would not follow the split.
    SWIFT_CHECK(!experts.adapter, UsageError,
                "expert parallelism of experts carrying LoRA (target_parameters) is not available yet",
                "train or resume the experts' LoRA with --ep_size 1");
    const std::string prefix = "model.layers." + std::to_string(i) + ".mlp.experts.";
    for (auto* p : {&experts.gate_up_proj, &experts.down_proj})
      out.push_back(keep_parameter_slice(prefix + (p == &experts.gate_up_proj ? "gate_up_proj" : "down_proj"), *p,
                                         /*dim=*/0, group->comm->rank(), group->comm->size()));
    experts.expert_parallel = group;
  }
  return out;
}

at::Tensor exchange_with_experts(const at::Tensor& rows, const at::Tensor& counts, const ExpertParallel& group,
                                 const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& run_local) {
  ExpertParallelComm& comm = *group.comm;
  const int n = comm.size();
  const int64_t local = group.local_experts();
  // First the counts: what each rank sends each expert of this rank ([n * local]: by source, then local expert).
  const at::Tensor sent_counts = counts.to(at::kLong);
  const std::vector<int64_t> equal(static_cast<size_t>(n), local);
  const at::Tensor received_counts = comm.all_to_all(sent_counts, equal, equal).to(at::kCPU);
  const std::vector<int64_t> send = sums_per_rank(sent_counts.to(at::kCPU), n, local);
  const std::vector<int64_t> receive = sums_per_rank(received_counts, n, local);
  const at::Tensor received = rows_all_to_all(rows, comm, send, receive);  // by source, each sorted by expert
  // The received rows regrouped by expert (stable: by source within an expert), as one grouped product wants them.
  const at::Tensor expert_of_row =
      at::repeat_interleave(at::arange(local, at::kLong).repeat({n}), received_counts).to(rows.device());
  const at::Tensor by_expert = at::argsort(expert_of_row, /*stable=*/true);
  const at::Tensor offsets = at::cumsum(received_counts.view({n, local}).sum(0), 0).to(at::kInt).to(rows.device());
  const at::Tensor computed = run_local(received.index_select(0, by_expert), offsets);
  // Back in the order received (row by_expert[i] is computed[i]), to return to their sources.
  const at::Tensor by_source = at::zeros_like(computed).index_copy(0, by_expert, computed);
  return rows_all_to_all(by_source, comm, receive, send);
}

}  // namespace swift::model
