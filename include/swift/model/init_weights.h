// Initialisation for training from scratch (--init_strategy), seeded: norms 1, biases 0, weights by strategy.
#pragma once

#include <cstdint>
#include <string>

#include "swift/model/decoder.h"

namespace swift::model {

// normal (std = initializer_range, transformers' default), uniform, zero, xavier_uniform, xavier_normal,
// kaiming_uniform, kaiming_normal, orthogonal. Throws UsageError naming --init_strategy for others.
void init_weights(CausalLM& model, const std::string& strategy, uint64_t seed);

// "normal, uniform, ..." for help texts and errors.
std::string init_strategies();

}  // namespace swift::model
