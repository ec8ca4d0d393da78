// --packing: several short examples in one row, with position ids that restart per sample and segment ids that
// keep attention within each sample.
#pragma once

#include <cstdint>
#include <vector>

#include "swift/data/example.h"

namespace swift::data {

// --packing: bin-packs examples into rows of at most packing_length tokens by first-fit-decreasing (stable on
// ties, so deterministic). Each row carries position_ids that restart at 0 per sample and segments (the sample's
// index in the row); the first label of each sample is forced to -100 so no loss crosses samples. Examples longer
// than packing_length get a row of their own. Every label token of the input is kept.
std::vector<Example> pack_examples(const std::vector<Example>& examples, int64_t packing_length);

// The examples concatenated into one row, as a packed row is: positions restarting and a segment per sample (an
// example that is itself a packed row keeps its samples apart), each sample's first label -100. --padding_free
// collates each micro-batch so, which trains on the same targets as padded rows.
Example pack_row(const std::vector<const Example*>& examples);

}  // namespace swift::data
