// The process-wide ZeRO-3 hook (see the header).
#include "swift/model/param_sharding.h"

#include <ATen/ATen.h>

#include <atomic>
#include <map>

namespace swift::model {

namespace {
std::atomic<ParamSharding*> g_sharding{nullptr};
}  // namespace

void set_param_sharding(ParamSharding* sharding) { g_sharding = sharding; }
ParamSharding* param_sharding() { return g_sharding; }

at::Tensor shape_only(at::IntArrayRef shape, const at::TensorOptions& options) {
  return at::empty({1}, options).expand(shape);
}

std::vector<at::Tensor> packed_like(const std::vector<at::Tensor>& like, const at::TensorOptions& options) {
  std::map<c10::ScalarType, int64_t> total;
  for (const auto& t : like) total[t.scalar_type()] += t.numel();
  std::map<c10::ScalarType, at::Tensor> buffers;
  for (const auto& [dtype, n] : total) buffers[dtype] = at::empty({n}, options.dtype(dtype));
  std::map<c10::ScalarType, int64_t> offset;
  std::vector<at::Tensor> out;
  out.reserve(like.size());
  for (const auto& t : like) {
    int64_t& at = offset[t.scalar_type()];
    out.push_back(buffers[t.scalar_type()].narrow(0, at, t.numel()).view(t.sizes()));
    at += t.numel();
  }
  return out;
}

bool holds_values(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return true;
  return t.is_contiguous() || t.storage().nbytes() >= static_cast<size_t>(t.numel()) * t.element_size();
}

}  // namespace swift::model
