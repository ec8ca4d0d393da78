// The model's parameters as a parallel strategy sees them (see parameter_layout.h).
#include "swift/model/parameter_layout.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

namespace swift::model {

ParameterLayout parameter_layout(CausalLM& model) {
  ParameterLayout layout;
  std::unordered_map<const void*, size_t> position;  // TensorImpl -> position in model order
  for (const auto& item : model->named_parameters()) {
    position[item.value().unsafeGetTensorImpl()] = layout.names.size();
    layout.names.push_back(item.key());
    layout.tensors.push_back(item.value());
  }
  std::vector<bool> in_layer(layout.names.size(), false);
  for (const auto& layer : *model->model->layers) {
    std::vector<size_t> members;
    for (const auto& p : layer->parameters()) {
      const size_t i = position.at(p.unsafeGetTensorImpl());
      members.push_back(i);
      in_layer[i] = true;
    }
    std::sort(members.begin(), members.end());
    layout.layers.push_back(std::move(members));
  }
  for (size_t i = 0; i < in_layer.size(); ++i)
    if (!in_layer[i]) layout.outer.push_back(i);
  return layout;
}

std::set<std::string> no_weight_decay(CausalLM& model) {
  std::set<std::string> names;
  for (const auto& item : model->named_modules()) {
    const std::string prefix = item.key().empty() ? "" : item.key() + ".";
    if (dynamic_cast<const RMSNormImpl*>(item.value().get()) != nullptr) {
      for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) names.insert(prefix + p.key());
    } else if (const auto* linear = dynamic_cast<const LinearImpl*>(item.value().get()); linear && linear->bias.defined()) {
      names.insert(prefix + "bias");
    }
  }
  return names;
}

std::vector<at::Tensor> gathered_around_use(CausalLM& model) {
  std::vector<at::Tensor> out;
  const bool tied = !model->lm_head && !model->is_sequence_classifier();
  if (!tied) out.push_back(model->model->embed_tokens->weight);
  if (model->lm_head && !model->lm_head->adapter) {
    out.push_back(model->lm_head->weight);
    if (model->lm_head->bias.defined()) out.push_back(model->lm_head->bias);
  }
  return out;
}

ParameterPlace parameter_place(const std::string& name) {
  const std::string layers = "model.layers.";
  ParameterPlace place;
  if (name.rfind(layers, 0) == 0) {
    place.side = ParameterPlace::Side::kLayer;
    place.layer = std::strtoll(name.c_str() + layers.size(), nullptr, 10);
  } else if (name.rfind("model.embed_tokens.", 0) != 0 && name.rfind("model.tok_embeddings.", 0) != 0) {  // InternLM2's
    place.side = ParameterPlace::Side::kOutput;
    place.output_layer = name.rfind("lm_head.", 0) == 0 || name.rfind("score.", 0) == 0 || name.rfind("output.", 0) == 0;
  }
  return place;
}

}  // namespace swift::model
