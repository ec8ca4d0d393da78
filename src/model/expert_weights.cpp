// Stacked expert parameters <-> a Hugging Face folder's tensor per expert (see expert_weights.h).
#include "swift/model/expert_weights.h"

#include <ATen/ATen.h>

namespace swift::model {

namespace {

const std::string kGateUp = ".experts.gate_up_proj", kDown = ".experts.down_proj";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The stored projections a stacked parameter is made of, in order, and the stored prefix before "experts." (with
// its dot).
std::optional<std::pair<std::string, std::vector<std::string>>> stored_projections(const std::string& name,
                                                                                   const MoeConfig& moe) {
  const auto& parts = moe.stored_expert_parts;  // gate, up, down
  if (ends_with(name, kGateUp))
    return std::pair{stored_parameter_name(name.substr(0, name.size() - kGateUp.size()) + ".", moe),
                     std::vector<std::string>{parts.at(0), parts.at(1)}};
  if (ends_with(name, kDown))
    return std::pair{stored_parameter_name(name.substr(0, name.size() - kDown.size()) + ".", moe),
                     std::vector<std::string>{parts.at(2)}};
  return std::nullopt;
}

}  // namespace

bool is_expert_parameter(const std::string& name) { return ends_with(name, kGateUp) || ends_with(name, kDown); }

// Every .mlp. under model.layers: right for Mixtral, whose every layer is sparse; a family with dense layers beside
// renamed sparse ones would need the layer's kind here.
std::string stored_parameter_name(const std::string& name, const MoeConfig& moe) {
  static const std::string kBlock = ".mlp.";
  const size_t at = name.find(kBlock);
  if (moe.stored_block == "mlp" || at == std::string::npos || name.rfind("model.layers.", 0) != 0) return name;
  return name.substr(0, at) + "." + moe.stored_block + "." + name.substr(at + kBlock.size());
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

std::optional<StoredExperts> find_stored_experts(const io::SafetensorsFolder& folder, const std::string& name,
                                                 const MoeConfig& moe) {
  const auto projections = stored_projections(name, moe);
  const int64_t num_experts = moe.num_experts;
  if (!projections || num_experts <= 0) return std::nullopt;
  const auto& [prefix, parts] = *projections;
  StoredExperts out;
  std::vector<int64_t> expert_shape;  // one expert's parts concatenated
  for (int64_t e = 0; e < num_experts; ++e) {
    std::vector<std::string> keys;
    std::vector<int64_t> shape;
    for (const auto& part : parts) {
      const std::string key = prefix + "experts." + std::to_string(e) + "." + part + ".weight";
      keys.push_back(key);
      if (!folder.contains(key)) {
        out.missing.push_back(key);
        continue;
      }
      const auto& s = folder.entry(key).shape;
      if (shape.empty()) shape = s;
      else if (s.size() == 2 && shape.size() == 2 && s[1] == shape[1]) shape[0] += s[0];
      else out.problem = key + " is " + shape_text(s) + ", which does not stack with the expert's other parts";
    }
    if (e == 0) expert_shape = shape;
    else if (out.missing.empty() && out.problem.empty() && shape != expert_shape)
      out.problem = "expert " + std::to_string(e) + " of " + name + " is " + shape_text(shape) + ", expert 0 " +
                    shape_text(expert_shape);
    out.keys.push_back(std::move(keys));
  }
  if (out.missing.empty() && out.problem.empty()) {
    out.shape = {num_experts};
    out.shape.insert(out.shape.end(), expert_shape.begin(), expert_shape.end());
  }
  return out;
}

void read_stored_experts(const io::SafetensorsFolder& folder, const StoredExperts& stored, at::Tensor& into,
                         int64_t first_expert) {
  at::NoGradGuard no_grad;
  for (int64_t e = 0; e < into.size(0); ++e) {
    int64_t row = 0;
    for (const auto& key : stored.keys.at(static_cast<size_t>(first_expert + e))) {
      const at::Tensor part = folder.get(key);
      into[e].narrow(0, row, part.size(0)).copy_(part);
      row += part.size(0);
      folder.release(key);
    }
  }
}

bool append_stored_experts(const std::string& name, const at::Tensor& stacked, const MoeConfig& moe,
                           io::NamedTensors& out) {
  const auto projections = stored_projections(name, moe);
  if (!projections || stacked.dim() != 3) return false;
  const auto& [prefix, parts] = *projections;
  const int64_t rows = stacked.size(1) / static_cast<int64_t>(parts.size());
  for (int64_t e = 0; e < stacked.size(0); ++e)
    for (size_t p = 0; p < parts.size(); ++p)
      out.emplace_back(prefix + "experts." + std::to_string(e) + "." + parts[p] + ".weight",
                       stacked[e].narrow(0, static_cast<int64_t>(p) * rows, rows));
  return true;
}

}  // namespace swift::model
