// --packing: first-fit-decreasing bins of examples (see packing.h).
#include "swift/data/packing.h"

#include <algorithm>
#include <numeric>

#include "swift/core/error.h"

namespace swift::data {

std::vector<Example> pack_examples(const std::vector<Example>& examples, int64_t packing_length) {
  SWIFT_ASSERT(packing_length > 0, "packing_length must be positive");
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return examples[a].input_ids.size() > examples[b].input_ids.size();
  });
  std::vector<std::vector<size_t>> bins;
  std::vector<int64_t> used;
  for (size_t i : order) {
    const auto n = static_cast<int64_t>(examples[i].input_ids.size());
    size_t bin = bins.size();
    for (size_t j = 0; j < bins.size(); ++j)
      if (used[j] + n <= packing_length) {
        bin = j;
        break;
      }
    if (bin == bins.size()) {
      bins.emplace_back();
      used.push_back(0);
    }
    bins[bin].push_back(i);
    used[bin] += n;
  }
  std::vector<Example> out;
  out.reserve(bins.size());
  for (const auto& bin : bins) {
    Example row;
    for (size_t s = 0; s < bin.size(); ++s) {
      const auto& e = examples[bin[s]];
      row.input_ids.insert(row.input_ids.end(), e.input_ids.begin(), e.input_ids.end());
      const size_t start = row.labels.size();
      row.labels.insert(row.labels.end(), e.labels.begin(), e.labels.end());
      if (!e.labels.empty()) row.labels[start] = -100;  // never predicted from the previous sample
      for (size_t t = 0; t < e.input_ids.size(); ++t) {
        row.position_ids.push_back(static_cast<int64_t>(t));
        row.segments.push_back(static_cast<int64_t>(s));
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace swift::data
