// Hugging Face folders keep a mixture-of-experts layer one tensor per expert and projection
// (model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight, as transformers saves them); the model holds each
// projection of all experts stacked (moe.h: mlp.experts.gate_up_proj [E, 2I, C], mlp.experts.down_proj [E, C, I]).
// This maps between the two. A folder that holds the stacked names (swift's model-parallel parts) is read as it is.
// A family whose files name the sparse block otherwise (Mixtral: block_sparse_moe, experts' w1/w3/w2) says so in its
// MoeConfig.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "swift/io/safetensors.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/model_config.h"

namespace swift::model {

// The stored tensors of one stacked expert parameter found in a folder.
struct StoredExperts {
  std::vector<std::vector<std::string>> keys;  // [expert][part]: the parts (gate, up) concatenated along dim 0
  std::vector<std::string> missing;            // keys the folder lacks
  std::vector<int64_t> shape;                  // the stacked shape they make (when none is missing and they agree)
  std::string problem;                         // parts whose shapes do not stack, described
};

// Whether `name` is a sparse layer's stacked experts ("model.layers.N.mlp.experts.gate_up_proj" / "down_proj"): the
// parameters stored one tensor per expert, and those expert parallelism splits.
bool is_expert_parameter(const std::string& name);

// The name a Hugging Face folder stores parameter `name` under: the same, except in a sparse block that the family's
// files name otherwise (Mixtral's model.layers.N.block_sparse_moe.gate.weight for model.layers.N.mlp.gate.weight).
std::string stored_parameter_name(const std::string& name, const MoeConfig& moe);

// For a stacked expert parameter `name` of a model with `moe`'s experts: its stored tensors in `folder`.
// nullopt when `name` is not a stacked expert parameter.
std::optional<StoredExperts> find_stored_experts(const io::SafetensorsFolder& folder, const std::string& name,
                                                 const MoeConfig& moe);
// Copies them into `into` (the stacked parameter, in its dtype and on its device), expert by expert: experts
// [first_expert, first_expert + into.size(0)) (an expert-parallel rank's share; default: all of them).
void read_stored_experts(const io::SafetensorsFolder& folder, const StoredExperts& stored, at::Tensor& into,
                         int64_t first_expert = 0);
// Appends to `out` the stored tensors of `stacked` under their Hugging Face names (views where the dtype allows);
// false when `name` is not a stacked expert parameter.
bool append_stored_experts(const std::string& name, const at::Tensor& stacked, const MoeConfig& moe,
                           io::NamedTensors& out);

}  // namespace swift::model
