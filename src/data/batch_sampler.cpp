// Seeded shuffled epochs (see batch_sampler.h).
#include "swift/data/batch_sampler.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "swift/core/error.h"

namespace swift::data {

BatchSampler::BatchSampler(size_t dataset_size, int64_t batch_size, uint64_t seed, bool shuffle)
    : size_(dataset_size), batch_size_(std::max<int64_t>(1, batch_size)), seed_(seed), shuffle_(shuffle) {
  SWIFT_ASSERT(dataset_size > 0, "BatchSampler over an empty dataset");
  reshuffle();
}

void BatchSampler::reshuffle() {
  order_.resize(size_);
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) {
    // Each epoch's order depends only on (seed, epoch): resuming at any epoch reproduces it.
    std::mt19937_64 rng(seed_ * 1000003ULL + static_cast<uint64_t>(epoch_));
    std::shuffle(order_.begin(), order_.end(), rng);
  }
}

std::vector<size_t> BatchSampler::next() {
  if (position_ >= size_) {
    ++epoch_;
    position_ = 0;
    reshuffle();
  }
  const size_t end = std::min(size_, position_ + static_cast<size_t>(batch_size_));
  std::vector<size_t> out(order_.begin() + static_cast<long>(position_), order_.begin() + static_cast<long>(end));
  position_ = end;
  return out;
}

void BatchSampler::set_position(int64_t epoch, size_t position) {
  epoch_ = epoch;
  position_ = position;
  reshuffle();
}

int64_t BatchSampler::batches_per_epoch() const {
  return static_cast<int64_t>((size_ + static_cast<size_t>(batch_size_) - 1) / static_cast<size_t>(batch_size_));
}

}  // namespace swift::data
