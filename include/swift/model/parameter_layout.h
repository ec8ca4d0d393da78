// What a parallel strategy and the optimizer need to know about a model's parameters, answered from the module
// tree so that no code outside src/model/ reads parameter names: which decoder layer each belongs to, which sit
// outside the layers (embeddings, final norm, LM head, score head), which take no weight decay, and which the
// model itself gathers around each of their uses under parameter sharding (sharded_ops.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "swift/model/decoder.h"

namespace swift::model {

struct ParameterLayout {
  // Every parameter in model order (named_parameters(): adapters and DoRA magnitudes included).
  std::vector<std::string> names;
  std::vector<at::Tensor> tensors;
  // Per decoder layer, the positions (into names/tensors, ascending) of its parameters.
  std::vector<std::vector<size_t>> layers;
  // The positions of the parameters outside the decoder layers, ascending.
  std::vector<size_t> outer;
};
ParameterLayout parameter_layout(CausalLM& model);

// Where a parameter sits in the decoder, from its checkpoint key alone (for plans made before the model exists, such
// as a loading placement plan): in decoder layer `layer`, on the input side (the token embedding and what a tuner
// adds to it), or on the output side (the final norm, the LM head, a score head).
struct ParameterPlace {
  enum class Side { kLayer, kInput, kOutput } side = Side::kInput;
  int64_t layer = -1;          // kLayer only
  bool output_layer = false;   // the LM head's or a score head's (absent when the embedding is tied)
};
ParameterPlace parameter_place(const std::string& name);

// The parameters AdamW does not decay, by name: biases and normalisation weights (as transformers' Trainer).
std::set<std::string> no_weight_decay(CausalLM& model);

// Under parameter sharding, the parameters the model gathers around each of their own operations rather than the
// caller around a micro-batch: an adapter-free LM head (with its bias), and the token embedding unless it is the
// head too. A tied embedding would be gathered twice per micro-batch (the lookup, the logits), doubling the
// exchange of what is often the largest tensor (10% slower on bench_dist's 25m model), so it is left to the caller.
std::vector<at::Tensor> gathered_around_use(CausalLM& model);

}  // namespace swift::model
