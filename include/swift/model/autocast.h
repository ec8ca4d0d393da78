// Mixed-precision compute over fp32 weights: LibTorch's autocast runs matmuls in bf16/fp16 while parameters,
// gradients and optimizer state stay fp32. One scope per forward pass, and the same scope again around the
// recomputation of a checkpointed layer in backward, so the recomputed layer is the function the forward ran.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>

namespace swift::model {

class AutocastScope {
 public:
  // dtype unset: does nothing (full-precision compute).
  AutocastScope(c10::DeviceType device, std::optional<c10::ScalarType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

  // The autocast dtype in effect on `device` now (unset when autocast is off): what a checkpointed layer records
  // in forward to recompute under in backward.
  static std::optional<c10::ScalarType> current(c10::DeviceType device);

 private:
  c10::DeviceType device_;
  bool active_;
  bool was_enabled_ = false;
  bool was_caching_ = true;
  c10::ScalarType previous_dtype_ = c10::kBFloat16;
};

}  // namespace swift::model
