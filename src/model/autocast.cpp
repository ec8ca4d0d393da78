// Mixed-precision compute scopes (see autocast.h).
#include "swift/model/autocast.h"

#include <ATen/autocast_mode.h>

#include "swift/model/param_sharding.h"

namespace swift::model {

AutocastScope::AutocastScope(c10::DeviceType device, std::optional<c10::ScalarType> dtype)
    : device_(device), active_(dtype.has_value()) {
  if (!active_) return;
  was_enabled_ = at::autocast::is_autocast_enabled(device_);
  previous_dtype_ = at::autocast::get_autocast_dtype(device_);
  was_caching_ = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_dtype(device_, *dtype);
  at::autocast::set_autocast_enabled(device_, true);
  // Autocast keeps the low-precision copy of every weight it casts until the outermost scope ends. Under ZeRO-3
  // that would keep a copy of each gathered layer's weights (half an fp32 model per rank) through the forward:
  // every use casts again instead.
  if (param_sharding()) at::autocast::set_autocast_cache_enabled(false);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::set_autocast_cache_enabled(was_caching_);
  at::autocast::set_autocast_enabled(device_, was_enabled_);
  at::autocast::set_autocast_dtype(device_, previous_dtype_);
  // Cached low-precision copies of the weights go stale at the optimizer step; the outermost scope drops them.
  if (!was_enabled_) at::autocast::clear_cache();
}

std::optional<c10::ScalarType> AutocastScope::current(c10::DeviceType device) {
  if (!at::autocast::is_autocast_enabled(device)) return std::nullopt;
  return at::autocast::get_autocast_dtype(device);
}

}  // namespace swift::model
