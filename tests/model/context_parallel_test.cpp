// Context-parallel attention (ring and Ulysses) against attention over the whole rows: outputs and the gradients of
// q, k and v, with n ranks as threads exchanging tensors in memory.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "swift/model/context_parallel.h"

namespace swift::model {
namespace {

// The ranks' meeting place: collectives matched by each rank's call count, ring shifts by channel.
class Exchange {
 public:
  explicit Exchange(int size) : size_(size) {}
  int size() const { return size_; }

  // Every rank's tensor of its `call`-th collective, once all have arrived.
  std::vector<at::Tensor> gather(int rank, int64_t call, const at::Tensor& t) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto& slot = collectives_[call];
    slot.resize(static_cast<size_t>(size_));
    slot[static_cast<size_t>(rank)] = t.clone();
    changed_.notify_all();
    changed_.wait(lock, [&] {
      for (const auto& x : slot)
        if (!x.defined()) return false;
      return true;
    });
    return slot;
  }
  void post(int to, int channel, const at::Tensor& t) {
    std::lock_guard<std::mutex> lock(mutex_);
    mail_[{to, channel}].push_back(t.clone());
    changed_.notify_all();
  }
  at::Tensor take(int rank, int channel) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto& box = mail_[{rank, channel}];
    changed_.wait(lock, [&] { return !box.empty(); });
    at::Tensor t = box.front();
    box.pop_front();
    return t;
  }

 private:
  int size_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, std::vector<at::Tensor>> collectives_;
  std::map<std::pair<int, int>, std::deque<at::Tensor>> mail_;
};

class ThreadComm : public ContextParallelComm {
 public:
  ThreadComm(Exchange& exchange, int rank) : exchange_(exchange), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return exchange_.size(); }
  at::Tensor all_gather(const at::Tensor& t, int64_t dim) override { return at::cat(exchange_.gather(rank_, calls_++, t), dim); }
  at::Tensor all_to_all(const at::Tensor& t, int64_t scatter_dim, int64_t gather_dim) override {
    std::vector<at::Tensor> parts;
    for (const auto& theirs : exchange_.gather(rank_, calls_++, t))
      parts.push_back(theirs.chunk(size(), scatter_dim)[static_cast<size_t>(rank_)]);
    return at::cat(parts, gather_dim);
  }
  std::function<at::Tensor()> start_ring_shift(const at::Tensor& t, int channel) override {
    exchange_.post((rank_ + 1) % size(), channel, t);
    return [this, channel] { return exchange_.take(rank_, channel); };
  }

 private:
  Exchange& exchange_;
  int rank_;
  int64_t calls_ = 0;
};

struct Case {
  ContextParallelAttention attention;
  int ranks;
  bool packed;
  int64_t window;
};

// Whole-row attention with the same rules (causal, within a segment, within the window).
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& segments,
                     int64_t window, double scale) {
  const int64_t T = q.size(2);
  const auto pos = at::arange(T, at::kLong);
  at::Tensor allowed = pos.view({1, T}).le(pos.view({T, 1}));
  if (window > 0) allowed = allowed.logical_and(pos.view({1, T}).gt(pos.view({T, 1}) - window));
  allowed = allowed.view({1, 1, T, T});
  if (segments.defined())
    allowed = allowed.logical_and(segments.view({segments.size(0), 1, T, 1}).eq(segments.view({segments.size(0), 1, 1, T})));
  return at::scaled_dot_product_attention(q, k, v, allowed, 0.0, false, scale, /*enable_gqa=*/true);
}

void check(const Case& c) {
  torch::manual_seed(3);
  const int64_t B = 2, H = 4, Hkv = 2, T = 8 * c.ranks, D = 8;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const at::Tensor q = at::randn({B, H, T, D}, at::kDouble), k = at::randn({B, Hkv, T, D}, at::kDouble),
                   v = at::randn({B, Hkv, T, D}, at::kDouble), weight = at::randn({B, H, T, D}, at::kDouble);
  at::Tensor segments;
  if (c.packed) {  // three samples per row, of uneven lengths, then pads (segment -1)
    segments = at::full({B, T}, -1, at::kLong);
    segments.narrow(1, 0, T / 4).fill_(0);
    segments.narrow(1, T / 4, T / 2).fill_(1);
    segments.narrow(1, 3 * T / 4, T / 8).fill_(2);
  }
  const at::Tensor qr = q.clone().requires_grad_(), kr = k.clone().requires_grad_(), vr = v.clone().requires_grad_();
  const at::Tensor expected = reference(qr, kr, vr, segments, c.window, scale);
  (expected * weight).sum().backward();

  Exchange exchange(c.ranks);
  std::vector<at::Tensor> out(static_cast<size_t>(c.ranks)), dq(out.size()), dk(out.size()), dv(out.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < c.ranks; ++r) {
    threads.emplace_back([&, r] {
      at::set_num_threads(1);
      ThreadComm comm(exchange, r);
      auto share = [&](const at::Tensor& t, int64_t dim) { return context_parallel_share(t, dim, r, c.ranks); };
      ContextParallelInputs in;
      in.comm = &comm;
      in.attention = c.attention;
      if (segments.defined()) {
        in.segments = share(segments, 1);
        in.all_segments = comm.all_gather(in.segments, 1);
      }
      const at::Tensor ql = share(q, 2).requires_grad_(), kl = share(k, 2).requires_grad_(), vl = share(v, 2).requires_grad_();
      const at::Tensor o = context_parallel_attention(ql, kl, vl, in, c.window, scale);
      (o * share(weight, 2)).sum().backward();
      const auto i = static_cast<size_t>(r);
      out[i] = o.detach();
      dq[i] = ql.grad();
      dk[i] = kl.grad();
      dv[i] = vl.grad();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < c.ranks; ++r) {
    const auto i = static_cast<size_t>(r);
    auto share = [&](const at::Tensor& t) { return context_parallel_share(t, 2, r, c.ranks); };
    EXPECT_TRUE(at::allclose(out[i], share(expected.detach()), 1e-9, 1e-9)) << "rank " << r << " output";
    EXPECT_TRUE(at::allclose(dq[i], share(qr.grad()), 1e-9, 1e-9)) << "rank " << r << " dq";
    EXPECT_TRUE(at::allclose(dk[i], share(kr.grad()), 1e-9, 1e-9)) << "rank " << r << " dk";
    EXPECT_TRUE(at::allclose(dv[i], share(vr.grad()), 1e-9, 1e-9)) << "rank " << r << " dv";
  }
}

TEST(ContextParallel, LoadBalancedShareKeepsChunksRankAndMirror) {
  const at::Tensor row = at::arange(8, at::kLong).view({1, 8});
  EXPECT_TRUE(at::equal(context_parallel_share(row, 1, 0, 2), at::tensor({0, 1, 6, 7}, at::kLong).view({1, 4})));
  EXPECT_TRUE(at::equal(context_parallel_share(row, 1, 1, 2), at::tensor({2, 3, 4, 5}, at::kLong).view({1, 4})));
  EXPECT_TRUE(at::equal(context_parallel_token_index(4, 1, 2, c10::kCPU), at::tensor({2, 3, 4, 5}, at::kLong)));
}

TEST(ContextParallel, RingAttentionEqualsWholeRows) {
  check({ContextParallelAttention::kRing, 2, false, 0});
  check({ContextParallelAttention::kRing, 4, false, 0});
}

TEST(ContextParallel, RingAttentionWithSegmentsAndWindow) {
  check({ContextParallelAttention::kRing, 2, true, 0});
  check({ContextParallelAttention::kRing, 4, true, 5});
  check({ContextParallelAttention::kRing, 3, false, 7});
}

TEST(ContextParallel, UlyssesEqualsWholeRows) {
  check({ContextParallelAttention::kUlysses, 2, false, 0});
  check({ContextParallelAttention::kUlysses, 4, false, 0});  // 2 KV heads over 4 ranks: repeated
  check({ContextParallelAttention::kUlysses, 2, true, 5});
}

}  // namespace
}  // namespace swift::model
