// Flat open-addressing hash tables for the BPE hot path: token string -> id, (left id, right id) -> merge, and
// the per-thread word cache. Private to src/tokenizer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace swift::tokenizer::detail {

inline uint64_t load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t mix(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// A fast 64-bit hash of a byte string (wyhash-style multiply-mix).
inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull;
  const char* p = s.data();
  size_t n = s.size();
  uint64_t seed = k0 ^ n, a = 0, b = 0;
  if (n <= 16) {
    if (n >= 8) {
      a = load64(p);
      b = load64(p + n - 8);
    } else if (n >= 4) {
      a = load32(p);
      b = load32(p + n - 4);
    } else if (n > 0) {
      a = (uint64_t(uint8_t(p[0])) << 16) | (uint64_t(uint8_t(p[n >> 1])) << 8) | uint8_t(p[n - 1]);
    }
  } else {
    const char* q = p;
    size_t i = n;
    while (i > 16) {
      seed = mix(load64(q) ^ k1, load64(q + 8) ^ seed);
      q += 16;
      i -= 16;
    }
    a = load64(q + i - 16);
    b = load64(q + i - 8);
  }
  return mix(k1 ^ n, mix(a ^ k1, b ^ seed));
}

inline size_t table_capacity(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  return cap;
}

// Token string -> id over strings owned elsewhere (`keys`, indexed by id; must outlive the table).
class StringIdTable {
 public:
  void build(const std::vector<std::string>* keys, const std::vector<int32_t>& ids) {
    keys_ = keys;
    slots_.assign(table_capacity(ids.size()), Slot{});
    mask_ = slots_.size() - 1;
    for (int32_t id : ids) insert((*keys_)[id], id);
  }
  // -1 when absent.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    uint64_t h = hash_bytes(key);
    uint32_t tag = uint32_t(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag && (*keys_)[s.id] == key) return s.id;
    }
  }

 private:
  struct Slot {
    uint32_t tag = 0;
    int32_t id = -1;
  };
  void insert(std::string_view key, int32_t id) {
    uint64_t h = hash_bytes(key);
    uint32_t tag = uint32_t(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{tag, id};
        return;
      }
      if (s.tag == tag && (*keys_)[s.id] == key) return;  // first id wins for duplicate strings
    }
  }
  const std::vector<std::string>* keys_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// (left id, right id) -> (rank, merged id).
class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n + n / 4) cap <<= 1;  // load <= 0.8: a smaller table misses the CPU cache less
    slots_.assign(cap, Slot{});
    mask_ = slots_.size() - 1;
  }
  // A later duplicate overwrites an earlier one, as in tokenizers (the merges become a hash map).
  void insert(int32_t a, int32_t b, Merge m) {
    uint64_t key = make_key(a, b);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == kEmpty || s.key == key) {
        s.key = key;
        s.merge = m;
        return;
      }
    }
  }
  const Merge* find(int32_t a, int32_t b) const {
    uint64_t key = make_key(a, b);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  static uint64_t make_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  size_t slot_of(uint64_t key) const { return size_t(mix(key, 0x9E3779B97F4A7C15ull)) & mask_; }
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{0, 0};
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Word -> token ids, bounded: when full it starts over (cheap, and keeps the hot words of the current text).
class WordCache {
 public:
  explicit WordCache(size_t max_entries = 1 << 15) : max_entries_(max_entries) {
    slots_.assign(table_capacity(max_entries), Slot{});
    mask_ = slots_.size() - 1;
  }
  bool find(std::string_view word, uint64_t h, const int32_t** ids, uint32_t* n) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key_len == kEmpty) return false;
      if (s.hash == h && s.key_len == word.size() &&
          std::memcmp(keys_.data() + s.key_off, word.data(), word.size()) == 0) {
        *ids = values_.data() + s.val_off;
        *n = s.val_len;
        return true;
      }
    }
  }
  void insert(std::string_view word, uint64_t h, const int32_t* ids, size_t n) {
    if (count_ >= max_entries_) clear();
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key_len != kEmpty) continue;
      s.hash = h;
      s.key_off = uint32_t(keys_.size());
      s.key_len = uint32_t(word.size());
      s.val_off = uint32_t(values_.size());
      s.val_len = uint32_t(n);
      keys_.append(word);
      values_.insert(values_.end(), ids, ids + n);
      ++count_;
      return;
    }
  }
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    keys_.clear();
    values_.clear();
    count_ = 0;
  }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t(0);
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_off = 0, key_len = kEmpty, val_off = 0, val_len = 0;
  };
  size_t max_entries_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
  std::string keys_;
  std::vector<int32_t> values_;
};

}  // namespace swift::tokenizer::detail
