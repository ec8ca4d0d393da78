// What every strategy shares (one process needs nothing more), and choosing the strategy the options ask for.
#include "swift/distributed/parallel_strategy.h"

#include <torch/cuda.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "swift/core/bytes.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/memory.h"
#include "swift/distributed/data_parallel.h"
#include "swift/distributed/gradient_norm.h"
#include "swift/distributed/model_parallel_strategy.h"
#include "swift/distributed/zero3_strategy.h"
#include "swift/model/param_sharding.h"

namespace fs = std::filesystem;

namespace swift::distributed {

namespace {

// The process's memory high-water mark (the GPU's peak reserved memory, or the peak resident set), in bytes.
double memory_high_water_bytes(const c10::Device& device) {
  return peak_memory_gib(device.is_cuda() ? device.index() : -1) * (1 << 30);
}

// One process: nothing to connect, share or reduce.
class SingleProcess : public ParallelStrategy {
 public:
  SingleProcess(std::string device, ZeroConfig zero) : ParallelStrategy(nullptr, std::move(device), std::move(zero)) {}
};

}  // namespace

ParallelStrategy::ParallelStrategy(std::unique_ptr<ProcessGroup> group, std::string device, ZeroConfig zero)
    : group_(std::move(group)), device_(std::move(device)), zero_(std::move(zero)) {}

ParallelStrategy::~ParallelStrategy() = default;

std::vector<double> ParallelStrategy::sum(const std::vector<double>& values) {
  return group_ ? group_->sum(values) : values;
}

void ParallelStrategy::run_micro_batches(MicroBatches& batches, bool backward) {
  for (size_t k = 0; k < batches.size(); ++k) {
    const bool last = k + 1 == batches.size();
    if (!batches.present(k)) {
      if (backward) skip_micro_batch(last);
      continue;
    }
    if (!backward) {
      batches.loss(k);
      continue;
    }
    begin_micro_batch(last);
    const at::Tensor loss = batches.loss(k);
    before_backward(last);
    loss.backward();
    end_micro_batch(last);
  }
}

std::string ParallelStrategy::share(const std::string& key, const std::string& value, int root) {
  return group_ ? group_->share(key, value, root) : value;
}

void ParallelStrategy::barrier() {
  if (group_) group_->barrier();
}

std::pair<size_t, size_t> ParallelStrategy::local_range(size_t n) const {
  const size_t world = static_cast<size_t>(data_parallel_size());
  if (world == 1) return {0, n};
  const size_t per_rank = (n + world - 1) / world;
  const size_t begin = std::min(n, per_rank * static_cast<size_t>(data_parallel_rank()));
  return {begin, std::min(n, begin + per_rank)};
}

model::PlacementPlan ParallelStrategy::placement_plan(const std::vector<std::string>& removed) {
  (void)removed;
  return {};
}

void ParallelStrategy::log_loaded(const model::CausalLM& model, double memory_before) {
  if (!group_) return;
  const c10::Device device = model->device();
  const size_t world = static_cast<size_t>(world_size()), me = static_cast<size_t>(rank());
  std::vector<double> per_rank(2 * world, 0.0);  // [high-water mark per rank..., raised by loading per rank...]
  per_rank[me] = memory_high_water_bytes(device);
  per_rank[world + me] = per_rank[me] - memory_before;
  per_rank = group_->sum(per_rank);
  const auto params = model->parameters();
  const bool sharded = std::any_of(params.begin(), params.end(), [](const at::Tensor& p) { return !model::holds_values(p); });
  log_info("model loaded; memory high-water mark per rank (", device.is_cuda() ? "GPU" : "RAM", "): ",
           bytes_per_rank(per_rank, 0, world), ", raised by loading: ", bytes_per_rank(per_rank, world, world),
           model->deferred_weights() ? " (tensor parallelism: the weights are read after the split, each rank its "
                                       "slices)"
           : shards_parameters()     ? " (ZeRO-3: each rank read only the parameters it owns)"
           : sharded                 ? " (pipeline parallelism: each stage read only its own layers)"
                                     : "");
}

void ParallelStrategy::assign_ownership(model::CausalLM& model) {
  model_ = model;
  for (const auto& item : model->named_parameters()) {
    full_parameter_bytes_ += static_cast<int64_t>(item.value().nbytes());
    if (!item.value().requires_grad()) continue;
    trainable_names_.push_back(item.key());
    trainable_.push_back(item.value());
    full_trainable_bytes_ += static_cast<int64_t>(item.value().nbytes());
    owned_.emplace_back(item.key(), item.value());
  }
}

ParallelFootprint ParallelStrategy::footprint(model::CausalLM& model) const {
  ParallelFootprint f;
  f.zero_stage = zero_.stage;
  f.world_size = world_size();
  f.bucket_bytes = zero_.reduce_bucket_bytes;
  f.optimizer_offloaded = zero_.offload_optimizer;
  f.params_offloaded = zero_.offload_param && model->device().is_cuda();
  return f;
}

double ParallelStrategy::clip_gradients(double max_norm, bool& overflow) {
  (void)overflow;  // summed gradients are the same on every rank: so are the overflow and the norm
  return max_norm > 0 ? torch::nn::utils::clip_grad_norm_(trainable_, max_norm)
                      : gradient_norm(trainable_);  // logged, nothing clipped
}

double ParallelStrategy::clip_sharded_gradients(double max_norm, bool& overflow) {
  overflow = group_->sum({overflow ? 1.0 : 0.0})[0] > 0;
  const double local = gradient_norm(trainable_);
  const double norm = std::sqrt(group_->sum({local * local})[0]);
  const double coefficient = max_norm / (norm + 1e-6);  // as clip_grad_norm_
  if (max_norm > 0 && coefficient < 1.0) scale_gradients(trainable_, coefficient);
  return norm;
}

std::string ParallelStrategy::optimizer_state_file() const {
  return shards_optimizer_state() ? optimizer_shard_name(rank(), world_size()) : "optimizer.safetensors";
}

void ParallelStrategy::log_time_in_collectives(const std::vector<const ProcessGroup*>& groups) {
  if (!group_) return;
  std::vector<double> per_rank(static_cast<size_t>(world_size()), 0.0);
  for (const ProcessGroup* g : groups)
    if (g) per_rank[static_cast<size_t>(rank())] += g->seconds_waiting();
  per_rank = group_->sum(per_rank);
  std::string text;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    char one[32];
    std::snprintf(one, sizeof(one), "%s%.2f", r ? ", " : "", per_rank[r]);
    text += one;
  }
  log_info("time waiting for collectives per rank (s): ", text);
}

std::vector<ParameterSlice> ParallelStrategy::parameter_slices() const {
  std::vector<ParameterSlice> out;
  for (size_t i = 0; i < trainable_.size(); ++i)
    out.push_back({trainable_names_[i], trainable_[i].sizes().vec(), -1, 0, 1});
  return out;
}

std::optional<fs::path> ParallelStrategy::relayout_optimizer_state(const std::vector<fs::path>& files) const {
  // Parameter sharding keeps released parameters empty between uses: their shapes say nothing here, and ZeRO-3
  // reads whole-parameter state anyway (a tensor-parallel checkpoint is not resumed under ZeRO-3).
  if (shards_parameters()) return std::nullopt;
  return distributed::relayout_optimizer_state(files, parameter_slices(), fs::temp_directory_path(), rank());
}

void ParallelStrategy::check_optimizer_state(const fs::path& dir) const {
  if (!shards_optimizer_state()) return;
  for (int r = 0; r < world_size(); ++r)
    SWIFT_CHECK(fs::exists(dir / optimizer_shard_name(r, world_size())), DataError,
                "rank " + std::to_string(r) + "'s optimizer shard did not reach " + dir.string(),
                "ZeRO checkpoints need --output_dir on a filesystem every node shares");
}

void ParallelStrategy::keep_owned(const std::vector<int>& owner_of) {
  owned_.clear();
  elsewhere_.clear();
  for (size_t i = 0; i < trainable_.size(); ++i) {
    if (owner_of[i] == rank()) owned_.emplace_back(trainable_names_[i], trainable_[i]);
    else elsewhere_.insert(trainable_names_[i]);
  }
}

std::vector<double> ParallelStrategy::bytes_per_owner(const std::vector<int64_t>& bytes, const std::vector<int>& owners) const {
  std::vector<double> per_rank(static_cast<size_t>(world_size()), 0.0);
  for (size_t i = 0; i < bytes.size(); ++i) per_rank[static_cast<size_t>(owners[i])] += static_cast<double>(bytes[i]);
  return per_rank;
}

std::string ParallelStrategy::bytes_per_rank(const std::vector<double>& per_rank, size_t first, size_t n) {
  std::string out;
  for (size_t r = 0; r < n; ++r) {
    if (r > 0) out += ", ";
    out += format_bytes(per_rank[first + r]);
  }
  return out;
}

void ParallelStrategy::log_held_memory(const std::string& what, model::CausalLM& model,
                                       const std::vector<at::Tensor>& optimizer_state) {
  const c10::Device device = model->device();
  const size_t world = static_cast<size_t>(world_size());
  std::vector<double> per_rank(2 * world, 0.0);  // [device bytes per rank..., CPU RAM bytes per rank...]
  auto add = [&](const at::Tensor& t) {
    per_rank[static_cast<size_t>(rank()) + (t.device() == device ? 0 : world)] += static_cast<double>(t.nbytes());
  };
  for (const auto& p : model->parameters())  // released (ZeRO-3) and other stages' (pipeline) parameters hold nothing
    if (model::holds_values(p)) add(p);
  for (const auto& p : trainable_)
    if (p.grad().defined()) add(p.grad());
  for (const auto& t : optimizer_state) add(t);
  const double unsharded = static_cast<double>(full_parameter_bytes_) + 3.0 * static_cast<double>(full_trainable_bytes_);
  per_rank = group_->sum(per_rank);
  double largest = 0, host_total = 0;
  for (size_t r = 0; r < world; ++r) {
    largest = std::max(largest, per_rank[r]);
    host_total += per_rank[world + r];
  }
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.2f", largest / unsharded);
  log_info(what, " holds after the first step (parameters + gradients + AdamW state) per rank: ",
           bytes_per_rank(per_rank, 0, world), "; without ", what.rfind("ZeRO", 0) == 0 ? "ZeRO " : "the split ",
           format_bytes(unsharded), " on every rank (largest share ",
           ratio, "x that)", host_total > 0 ? "; offloaded to CPU RAM: " + bytes_per_rank(per_rank, world, world) : std::string());
}

std::unique_ptr<ParallelStrategy> make_parallel_strategy(const ParallelOptions& options, const std::string& device_flag,
                                                         const std::string& log_level) {
  std::string device = device_flag;
  std::unique_ptr<ProcessGroup> group;
  if (options.env.distributed()) {
    init_logging(log_level, options.env.rank, options.env.world_size);
    GroupOptions group_options;
    group_options.timeout = std::chrono::seconds(options.timeout_seconds);
    group_options.backend = options.backend;
    if (parse_device(device).is_cuda()) {  // one GPU per local rank; with Slurm's per-task binding each rank sees only its own
      const int visible = static_cast<int>(torch::cuda::device_count());
      device = "cuda:" + std::to_string(options.env.local_rank % std::max(1, visible));
      // NCCL refuses two ranks on one GPU (after the rendezvous, as "Duplicate GPU detected"): say so before it.
      // Only where every local rank sees the same GPUs, as under torchrun and swift's launcher (LOCAL_WORLD_SIZE set);
      // Slurm's per-task binding shows each rank only its own.
      const int local = options.env.local_world_size;
      const bool same_gpus_for_all = std::getenv("LOCAL_WORLD_SIZE") != nullptr && options.env.source != "slurm";
      if (same_gpus_for_all && visible < local && visible > 0) {
        const std::string shared = std::to_string(local) + " ranks on this machine (LOCAL_WORLD_SIZE) share " +
                                   std::to_string(visible) + " visible GPU" + (visible > 1 ? "s" : "");
        SWIFT_CHECK(options.backend != "nccl", UsageError, "--ddp_backend nccl: " + shared + "; NCCL needs a GPU per rank",
                    "start one rank per GPU (NPROC_PER_NODE=" + std::to_string(visible) +
                        ", or check CUDA_VISIBLE_DEVICES), or use --ddp_backend gloo to share them (slow)");
        if (options.backend == "auto") {
          if (options.env.rank == 0) log_info(shared, ": NCCL needs a GPU per rank, so --ddp_backend auto takes gloo");
          group_options.backend = "gloo";
        }
      }
    }
    group = ProcessGroup::connect(options.env, parse_device(device), group_options);
  }

  ZeroConfig zero = options.zero;
  const bool cuda = parse_device(device).is_cuda();
  if (zero.stage > 0 && !group) {
    log_info("--deepspeed ", zero.source, ": one process has nothing to shard; training without ZeRO");
    zero.stage = 0;
  }
  if (zero.offload_param && zero.stage != 3) {  // as DeepSpeed: parameters are offloaded by ZeRO-3 only
    log_info("--deepspeed ", zero.source, ": offload_param applies to ZeRO-3 over several ranks; the parameters stay ",
             cuda ? "on the GPU" : "where they are");
    zero.offload_param = false;
  }
  if (zero.offload_param) {
    log_info("ZeRO-3 offload_param: each rank keeps its parameters in CPU RAM between uses",
             cuda ? " (pinned), copied to the GPU for each gather"
                  : "; on a CPU run that is the memory they would be in anyway (the GPU's path, nothing saved)");
    if (cuda && !zero.offload_optimizer) {
      log_info("offload_param: the AdamW state goes to CPU RAM too, where the parameters are updated");
      zero.offload_optimizer = true;
    }
  }
  if (zero.offload_optimizer && !cuda)
    log_info("--deepspeed ", zero.source, ": offload_optimizer has no effect on a CPU run: the optimizer runs there already");
  // ZeRO-Offload on a GPU (one process too): the AdamW moments and fp32 master weights in CPU RAM.
  zero.offload_optimizer = zero.offload_optimizer && cuda;
  if (!group) return std::make_unique<SingleProcess>(device, zero);
  std::unique_ptr<ParallelStrategy> strategy;
  if (options.splits_model()) {
    ModelParallelSizes sizes;
    sizes.tp = static_cast<int>(options.tp_size);
    sizes.ep = static_cast<int>(options.ep_size);
    sizes.sequence_parallel = options.sequence_parallel;
    sizes.pp = static_cast<int>(options.pp_size);
    sizes.cp = static_cast<int>(options.cp_size);
    sizes.context_attention = options.context_attention;
    sizes.virtual_stages = static_cast<int>(options.virtual_stages);
    sizes.distributed_optimizer = options.distributed_optimizer;
    zero.stage = 0;  // ZeRO-1 over the replicas is the distributed optimizer's
    sizes.first_stage_layers = options.first_stage_layers;
    sizes.last_stage_layers = options.last_stage_layers;
    strategy = std::make_unique<ModelParallel>(std::move(group), device, zero, sizes);
  }
  else if (zero.stage == 3) strategy = std::make_unique<Zero3Strategy>(std::move(group), device, zero);
  else strategy = std::make_unique<DataParallel>(std::move(group), device, zero);
  strategy->local_world_size_ = options.env.local_world_size;
  return strategy;
}

}  // namespace swift::distributed
