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
    std::vector<const Example*> members;
    for (size_t i : bin) members.push_back(&examples[i]);
    out.push_back(pack_row(members));
  }
  return out;
}

Example pack_row(const std::vector<const Example*>& examples) {
  Example row;
  int64_t segment = 0;
  for (const Example* e : examples) {
    const size_t start = row.input_ids.size();
    row.input_ids.insert(row.input_ids.end(), e->input_ids.begin(), e->input_ids.end());
    row.labels.insert(row.labels.end(), e->labels.begin(), e->labels.end());
    if (e->segments.empty()) {  // one sample
      if (!e->labels.empty()) row.labels[start] = -100;  // never predicted from the previous sample
      for (size_t t = 0; t < e->input_ids.size(); ++t) {
        row.position_ids.push_back(static_cast<int64_t>(t));
        row.segments.push_back(segment);
      }
      ++segment;
      continue;
    }
    // A packed row: its samples (their first labels already -100) renumbered after the ones before.
    const int64_t first = e->segments.front();
    int64_t last = first;
    for (size_t t = 0; t < e->segments.size(); ++t) {
      row.position_ids.push_back(e->position_ids[t]);
      row.segments.push_back(segment + e->segments[t] - first);
      last = std::max(last, e->segments[t]);
    }
    segment += last - first + 1;
  }
  return row;
}

}  // namespace swift::data
