// Activation (gradient) checkpointing of one decoder layer, as torch.utils.checkpoint (use_reentrant, with
// preserve_rng_state) does in Python: the forward pass keeps only the layer's input; the backward pass re-runs the
// layer with grad enabled under the RNG state the forward saw (so LoRA dropout draws the same mask) and
// back-propagates the incoming gradient through it. Inputs and trainable parameters get the same gradients as
// without checkpointing; frozen parameters (requires_grad false) get none. Under ZeRO-3 (model::ParamSharding)
// the layer's parameters are gathered around the forward and around the recomputation, and the parameter
// gradients go to their owners before the backward step returns.
#pragma once

#include <ATen/core/Tensor.h>

#include "swift/model/decoder.h"

namespace swift::model {

// layer->forward(x, in), recomputed in backward instead of keeping its activations. Needs grad mode on to be
// useful (without it, or when neither x nor any parameter of the layer requires grad, it is a plain forward).
// `in` must carry no KV cache; its tensors (cos/sin, masks) are treated as constants. The layer must outlive the
// backward pass (it is held by a shared pointer until then).
at::Tensor checkpointed_layer_forward(const std::shared_ptr<DecoderLayerImpl>& layer, const at::Tensor& x,
                                      const AttentionInputs& in);

}  // namespace swift::model
