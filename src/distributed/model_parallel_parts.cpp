// A whole model cut into a model-parallel checkpoint's parts (see model_parallel_parts.h).
#include "swift/distributed/model_parallel_parts.h"

#include <ATen/ATen.h>

#include <map>

#include "swift/core/error.h"
#include "swift/distributed/pipeline_schedule.h"
#include "swift/io/model_parallel_files.h"
#include "swift/model/param_sharding.h"
#include "swift/model/tensor_parallel.h"

namespace fs = std::filesystem;

namespace swift::distributed {

namespace {

// A tensor-parallel group of which only the split is asked (which parameters, along which dimension): splitting
// never exchanges anything.
class SplitOnlyComm : public model::TensorParallelComm {
 public:
  explicit SplitOnlyComm(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  void all_reduce_sum(at::Tensor&) override { fail(); }
  void all_reduce_max(at::Tensor&) override { fail(); }
  at::Tensor all_gather(const at::Tensor&, int64_t) override { fail(); }
  at::Tensor reduce_scatter_sum(const at::Tensor&, int64_t) override { fail(); }

 private:
  [[noreturn]] static void fail() { SWIFT_ASSERT(false, "a split-only tensor-parallel group exchanges nothing"); }
  int size_;
};

// name -> (dimension, whole size) of every parameter tensor parallelism over `tp` ranks splits, read off a model of
// the same configuration whose parameters are shapes only (so splitting it copies nothing).
std::map<std::string, std::pair<int64_t, int64_t>> tensor_parallel_splits(const model::CausalLM& model, int tp) {
  if (tp == 1) return {};
  model::CausalLM probe(model->config(), at::TensorOptions().dtype(model->dtype()));
  {
    at::NoGradGuard no_grad;
    for (auto& p : probe->parameters()) p.set_data(model::shape_only(p.sizes(), p.options()));
  }
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  // Sequence parallelism splits the same parameters; a mixture-of-experts model trains only with it under TP.
  const bool sequence_parallel = model->config().is_moe();
  for (const auto& s : model::apply_tensor_parallel(probe, std::make_shared<SplitOnlyComm>(tp), sequence_parallel).sharded)
    out[s.name] = {s.dim, s.full_size};
  return out;
}

}  // namespace

void save_model_part_of_rank(model::CausalLM& model, const fs::path& dir, int tp_rank, int stage,
                             const std::function<bool(const std::string&, const at::Tensor&)>& in_stage,
                             const SliceOfParameter& slice_of, std::optional<c10::ScalarType> dtype) {
  at::NoGradGuard no_grad;
  io::NamedTensors tensors;
  std::map<std::string, io::TensorPart> parts;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (!in_stage(name, item.value())) continue;
    auto slice = slice_of(name, item.value().detach());
    if (!slice && tp_rank != 0) continue;  // whole on every TP rank: the first writes it
    at::Tensor t = slice ? slice->first : item.value().detach();
    if (dtype) t = t.to(*dtype);
    if (slice) parts[name] = slice->second;
    tensors.emplace_back(name, t);
  }
  io::save_model_part(dir / io::model_part_file_name(tp_rank, stage), tensors, parts);
}

void save_model_parallel_parts(model::CausalLM& model, const fs::path& dir, int tp, int pp,
                               std::optional<c10::ScalarType> dtype) {
  const auto splits = tensor_parallel_splits(model, tp);
  const auto layer_begin = pipeline_layer_split(model->config().num_hidden_layers, pp);
  for (int stage = 0; stage < pp; ++stage)
    for (int rank = 0; rank < tp; ++rank)
      save_model_part_of_rank(
          model, dir, rank, stage,
          [&](const std::string& name, const at::Tensor&) { return pipeline_stage_of(name, layer_begin) % pp == stage; },
          [&](const std::string& name, const at::Tensor& value) -> std::optional<std::pair<at::Tensor, io::TensorPart>> {
            const auto split = splits.find(name);
            if (split == splits.end()) return std::nullopt;
            const auto [dim, whole] = split->second;
            const int64_t size = whole / tp;
            return std::pair{value.narrow(dim, rank * size, size).contiguous(), io::TensorPart{dim, rank * size, whole}};
          },
          dtype);
  io::write_model_parallel_index(dir, tp, pp);
}

}  // namespace swift::distributed
