// The process-wide ZeRO-3 hook (see the header).
#include "swift/model/param_sharding.h"

#include <ATen/ATen.h>

#include <atomic>

namespace swift::model {

namespace {
std::atomic<ParamSharding*> g_sharding{nullptr};
}  // namespace

void set_param_sharding(ParamSharding* sharding) { g_sharding = sharding; }
ParamSharding* param_sharding() { return g_sharding; }

at::Tensor placeholder(at::IntArrayRef shape, const at::TensorOptions& options) {
  return at::empty({1}, options).expand(shape);
}

bool holds_values(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return true;
  return t.is_contiguous() || t.storage().nbytes() >= static_cast<size_t>(t.numel()) * t.element_size();
}

}  // namespace swift::model
