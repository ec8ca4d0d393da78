// CPython's Mersenne Twister (Modules/_randommodule.c: init_by_array, genrand_uint32, random_random), for one
// seeded draw (see python_random.h).
#include "swift/core/python_random.h"

#include <array>
#include <cstddef>
#include <vector>

namespace swift {

namespace {

constexpr int kN = 624, kM = 397;

class PythonMersenneTwister {
 public:
  explicit PythonMersenneTwister(uint64_t seed) {
    // An integer seed is taken as its 32-bit words, least significant first (0: one word 0).
    std::vector<uint32_t> key;
    do {
      key.push_back(static_cast<uint32_t>(seed & 0xffffffffULL));
      seed >>= 32;
    } while (seed != 0);
    init_by_array(key);
  }

  uint32_t next() {
    if (index_ >= kN) refill();
    uint32_t y = mt_[static_cast<std::size_t>(index_++)];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
  }

 private:
  void init_genrand(uint32_t s) {
    mt_[0] = s;
    for (int i = 1; i < kN; ++i) {
      const uint32_t prev = mt_[static_cast<std::size_t>(i - 1)];
      mt_[static_cast<std::size_t>(i)] = 1812433253U * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
    }
    index_ = kN;
  }

  void init_by_array(const std::vector<uint32_t>& key) {
    init_genrand(19650218U);
    int i = 1;
    std::size_t j = 0;
    for (int k = kN > static_cast<int>(key.size()) ? kN : static_cast<int>(key.size()); k > 0; --k) {
      const uint32_t prev = mt_[static_cast<std::size_t>(i - 1)];
      mt_[static_cast<std::size_t>(i)] = (mt_[static_cast<std::size_t>(i)] ^ ((prev ^ (prev >> 30)) * 1664525U)) + key[j] +
                                    static_cast<uint32_t>(j);
      ++i;
      ++j;
      if (i >= kN) {
        mt_[0] = mt_[kN - 1];
        i = 1;
      }
      if (j >= key.size()) j = 0;
    }
    for (int k = kN - 1; k > 0; --k) {
      const uint32_t prev = mt_[static_cast<std::size_t>(i - 1)];
      mt_[static_cast<std::size_t>(i)] = (mt_[static_cast<std::size_t>(i)] ^ ((prev ^ (prev >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
      ++i;
      if (i >= kN) {
        mt_[0] = mt_[kN - 1];
        i = 1;
      }
    }
    mt_[0] = 0x80000000U;
  }

  void refill() {
    const auto twist = [](uint32_t upper, uint32_t lower, uint32_t far) {
      const uint32_t y = (upper & 0x80000000U) | (lower & 0x7fffffffU);
      return far ^ (y >> 1) ^ ((y & 1U) ? 0x9908b0dfU : 0U);
    };
    for (int k = 0; k < kN; ++k)
      mt_[static_cast<std::size_t>(k)] = twist(mt_[static_cast<std::size_t>(k)], mt_[static_cast<std::size_t>((k + 1) % kN)],
                                          mt_[static_cast<std::size_t>((k + kM) % kN)]);
    index_ = 0;
  }

  std::array<uint32_t, kN> mt_{};
  int index_ = kN;
};

}  // namespace

double python_random_first(uint64_t seed) {
  PythonMersenneTwister mt(seed);
  const uint32_t a = mt.next() >> 5, b = mt.next() >> 6;  // 53 random bits, as random_random
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

}  // namespace swift
