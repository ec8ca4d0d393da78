// The order examples are drawn in: seeded shuffled epochs whose position can be saved and restored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace swift::data {

// Epochs of seeded shuffles over a dataset; the position (epoch, index) is all resume needs.
class BatchSampler {
 public:
  BatchSampler(size_t dataset_size, int64_t batch_size, uint64_t seed, bool shuffle = true);
  // The next micro-batch's example indices; wraps into the next epoch (a short last batch ends each epoch).
  std::vector<size_t> next();
  int64_t epoch() const { return epoch_; }
  size_t position() const { return position_; }
  void set_position(int64_t epoch, size_t position);
  int64_t batches_per_epoch() const;

 private:
  void reshuffle();
  size_t size_;
  int64_t batch_size_;
  uint64_t seed_;
  bool shuffle_;
  int64_t epoch_ = 0;
  size_t position_ = 0;
  std::vector<size_t> order_;
};

}  // namespace swift::data
