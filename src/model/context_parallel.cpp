// Context parallelism inside the model: ring and Ulysses attention (see context_parallel.h).
#include "swift/model/context_parallel.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <cmath>
#include <limits>

#include "swift/core/error.h"

namespace swift::model {

at::Tensor context_parallel_token_index(int64_t local_length, int rank, int size, c10::Device device) {
  SWIFT_ASSERT(local_length % 2 == 0, "a context-parallel share is two chunks of equal length");
  const int64_t chunk = local_length / 2;
  const auto options = at::TensorOptions().dtype(at::kLong).device(device);
  return at::cat({at::arange(rank * chunk, (rank + 1) * chunk, options),
                  at::arange((2 * size - 1 - rank) * chunk, (2 * size - rank) * chunk, options)});
}

at::Tensor context_parallel_share(const at::Tensor& t, int64_t dim, int rank, int size) {
  SWIFT_ASSERT(t.size(dim) % (2 * size) == 0, "a context-parallel split needs a length that 2 x the group divides");
  const int64_t chunk = t.size(dim) / (2 * size);
  return at::cat({t.narrow(dim, rank * chunk, chunk), t.narrow(dim, (2 * size - 1 - rank) * chunk, chunk)}, dim);
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// bool [B|1, 1, Tq, Tk]: which keys each query sees, from their indices in the whole row and their segments.
at::Tensor allowed_keys(const at::Tensor& q_index, const at::Tensor& k_index, const at::Tensor& q_segments,
                        const at::Tensor& k_segments, int64_t window) {
  const int64_t Tq = q_index.size(0), Tk = k_index.size(0);
  at::Tensor allowed = k_index.view({1, Tk}).le(q_index.view({Tq, 1}));
  if (window > 0) allowed = allowed.logical_and(k_index.view({1, Tk}).gt(q_index.view({Tq, 1}) - window));
  allowed = allowed.view({1, 1, Tq, Tk});
  if (q_segments.defined()) {
    const int64_t B = q_segments.size(0);
    allowed = allowed.logical_and(q_segments.view({B, 1, Tq, 1}).eq(k_segments.view({B, 1, 1, Tk})));
  }
  return allowed;
}

// One ring step's view: this rank's queries against the block of keys that started on rank `source`.
struct RingBlock {
  at::Tensor q_index, q_segments, all_segments;
  int rank = 0, size = 1;
  int64_t window = 0;

  at::Tensor mask(int source, int64_t length) const {
    const at::Tensor k_index = context_parallel_token_index(length, source, size, q_index.device());
    const at::Tensor k_segments = all_segments.defined() ? all_segments.narrow(1, source * length, length) : at::Tensor();
    return allowed_keys(q_index, k_index, q_segments, k_segments, window);
  }
};

// [B, Hkv, T, D] -> [B, H, T, D], query head h using key/value head h / (H / Hkv) (as enable_gqa does).
at::Tensor expand_heads(const at::Tensor& kv, int64_t heads) {
  const int64_t groups = heads / kv.size(1);
  return groups == 1 ? kv : kv.repeat_interleave(groups, 1);
}

// The gradient of expand_heads: each key/value head's query heads summed.
at::Tensor reduce_heads(const at::Tensor& g, int64_t kv_heads) {
  const int64_t groups = g.size(1) / kv_heads;
  if (groups == 1) return g;
  return g.view({g.size(0), kv_heads, groups, g.size(2), g.size(3)}).sum(2);
}

at::Tensor finite_or_zero(const at::Tensor& t) { return at::where(at::isinf(t), at::zeros_like(t), t); }

// Scores and their softmax in float32 (float64 stays: the tests compare in it).
c10::ScalarType compute_type(const at::Tensor& q) { return q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat; }

ContextParallelComm* comm_of(AutogradContext* ctx) {
  return reinterpret_cast<ContextParallelComm*>(ctx->saved_data["comm"].toInt());
}

RingBlock ring_block(AutogradContext* ctx, int64_t local_length, c10::Device device) {
  ContextParallelComm* comm = comm_of(ctx);
  RingBlock b;
  b.rank = comm->rank();
  b.size = comm->size();
  b.window = ctx->saved_data["window"].toInt();
  const auto defined_or_none = [](const at::Tensor& t) { return t.numel() > 0 ? t : at::Tensor(); };
  b.q_segments = defined_or_none(ctx->saved_data["segments"].toTensor());
  b.all_segments = defined_or_none(ctx->saved_data["all_segments"].toTensor());
  b.q_index = context_parallel_token_index(local_length, b.rank, b.size, device);
  return b;
}

// This rank's queries (qf: [B, H, Tq, D] in the compute dtype) against the block of keys and values that started on
// rank `source` (block: [2, B, Hkv, Tk, D]): the scaled scores [B, H, Tq, Tk], -inf where the mask hides a key, and the
// block expanded to the query heads. Undefined scores when the mask hides the whole block.
struct BlockScores {
  at::Tensor scores, keys, values;
};

BlockScores block_scores(const RingBlock& geometry, const at::Tensor& qf, const at::Tensor& block, int source, double scale) {
  const at::Tensor allowed = geometry.mask(source, qf.size(2));
  if (!allowed.any().item<bool>()) return {};
  BlockScores b;
  b.keys = expand_heads(block[0].to(qf.scalar_type()), qf.size(1));
  b.values = expand_heads(block[1].to(qf.scalar_type()), qf.size(1));
  b.scores = at::matmul(qf, b.keys.transpose(-1, -2)).mul_(scale).masked_fill_(allowed.logical_not(), -INFINITY);
  return b;
}

constexpr int kKeysChannel = 0, kGradientsChannel = 1;

// Ring attention: forward and backward each pass the key/value blocks once around the ring, computing in float32
// one [Tq, Tk] block of scores at a time (flash attention's recurrences: the output and the log-sum-exp of the scores
// seen so far, merged block by block; the backward recomputes each block's probabilities from the final log-sum-exp).
struct RingAttention : torch::autograd::Function<RingAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            int64_t comm, const at::Tensor& segments, const at::Tensor& all_segments, int64_t window,
                            double scale) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["segments"] = segments;
    ctx->saved_data["all_segments"] = all_segments;
    ctx->saved_data["window"] = window;
    ctx->saved_data["scale"] = scale;
    const int64_t T = q.size(2), H = q.size(1);
    const RingBlock geometry = ring_block(ctx, T, q.device());
    const c10::ScalarType compute = compute_type(q);
    const at::Tensor qf = q.to(compute);
    at::Tensor out = at::zeros(qf.sizes(), qf.options());
    at::Tensor lse = at::full({q.size(0), H, T}, -std::numeric_limits<float>::infinity(), qf.options());
    at::Tensor block = at::stack({k, v});  // travels around the ring
    ContextParallelComm& group = *comm_of(ctx);
    for (int step = 0; step < geometry.size; ++step) {
      const int source = (geometry.rank - step + geometry.size) % geometry.size;
      std::function<at::Tensor()> next;
      if (step + 1 < geometry.size) next = group.start_ring_shift(block, kKeysChannel);
      if (const BlockScores b = block_scores(geometry, qf, block, source, scale); b.scores.defined()) {
        const at::Tensor block_lse = at::logsumexp(b.scores, -1);  // -inf on a row that sees none of this block
        const at::Tensor block_out = at::matmul(at::exp(b.scores - finite_or_zero(block_lse).unsqueeze(-1)), b.values);
        const at::Tensor merged = at::logaddexp(lse, block_lse);
        const at::Tensor base = finite_or_zero(merged);
        out = out * at::exp(lse - base).unsqueeze(-1) + block_out * at::exp(block_lse - base).unsqueeze(-1);
        lse = merged;
      }
      if (next) block = next();
    }
    ctx->save_for_backward({q, k, v, out, lse});
    return out.to(q.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const int64_t T = q.size(2), kv_heads = k.size(1);
    const double scale = ctx->saved_data["scale"].toDouble();
    const RingBlock geometry = ring_block(ctx, T, q.device());
    ContextParallelComm& group = *comm_of(ctx);
    const c10::ScalarType compute = compute_type(q);
    const at::Tensor qf = q.to(compute), dout = grads[0].to(compute);
    const at::Tensor delta = (dout * out).sum(-1, /*keepdim=*/true);  // [B, H, T, 1]
    // Every row saw at least its own token, so the log-sum-exp is finite.
    const at::Tensor row_lse = lse.unsqueeze(-1);
    at::Tensor dq = at::zeros(qf.sizes(), qf.options());
    at::Tensor block = at::stack({k, v});
    at::Tensor block_grad = at::zeros(block.sizes(), block.options().dtype(compute));  // travels with the block
    for (int step = 0; step < geometry.size; ++step) {
      const int source = (geometry.rank - step + geometry.size) % geometry.size;
      std::function<at::Tensor()> next;
      if (step + 1 < geometry.size) next = group.start_ring_shift(block, kKeysChannel);
      if (const BlockScores b = block_scores(geometry, qf, block, source, scale); b.scores.defined()) {
        const at::Tensor p = at::exp(b.scores - row_lse);  // [B, H, Tq, Tk]
        const at::Tensor dp = at::matmul(dout, b.values.transpose(-1, -2));
        const at::Tensor ds = p * (dp - delta);
        dq.add_(at::matmul(ds, b.keys), scale);
        block_grad[0].add_(reduce_heads(at::matmul(ds.transpose(-1, -2), qf), kv_heads), scale);
        block_grad[1].add_(reduce_heads(at::matmul(p.transpose(-1, -2), dout), kv_heads));
      }
      // The block's gradient goes on with it; after the last step it reaches the rank the block started on.
      block_grad = group.start_ring_shift(block_grad, kGradientsChannel)();
      if (next) block = next();
    }
    return {dq.to(q.scalar_type()), block_grad[0].to(k.scalar_type()), block_grad[1].to(v.scalar_type()),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The all-to-all with its gradient (the inverse all-to-all).
struct AllToAll : torch::autograd::Function<AllToAll> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm, int64_t scatter_dim, int64_t gather_dim) {
    ctx->saved_data["comm"] = comm;
    ctx->saved_data["scatter"] = scatter_dim;
    ctx->saved_data["gather"] = gather_dim;
    return reinterpret_cast<ContextParallelComm*>(comm)->all_to_all(x, scatter_dim, gather_dim);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor g = comm_of(ctx)->all_to_all(grads[0], ctx->saved_data["gather"].toInt(), ctx->saved_data["scatter"].toInt());
    return {g, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor all_to_all(const at::Tensor& x, ContextParallelComm& comm, int64_t scatter_dim, int64_t gather_dim) {
  return AllToAll::apply(x, reinterpret_cast<int64_t>(&comm), scatter_dim, gather_dim);
}

// Ulysses: every token for this rank's heads, attention in the rows' own order, then back.
at::Tensor ulysses_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const ContextParallelInputs& in,
                             int64_t window, double scale) {
  ContextParallelComm& comm = *in.comm;
  const int n = comm.size();
  const int64_t H = q.size(1), T = q.size(2);
  SWIFT_ASSERT(H % n == 0, "Ulysses needs heads the group divides (checked before loading)");
  // Key/value heads the group does not divide are repeated up to the query heads (ms-swift does the same).
  const bool repeat = k.size(1) % n != 0;
  const at::Tensor kk = repeat ? expand_heads(k, H) : k, vv = repeat ? expand_heads(v, H) : v;
  const at::Tensor qa = all_to_all(q, comm, 1, 2), ka = all_to_all(kk, comm, 1, 2), va = all_to_all(vv, comm, 1, 2);
  // Rank order (each rank's two chunks) -> the rows' order, so attention sees an ordinary causal sequence.
  std::vector<at::Tensor> indices;
  for (int r = 0; r < n; ++r) indices.push_back(context_parallel_token_index(T, r, n, q.device()));
  const at::Tensor gathered_index = at::cat(indices);
  const at::Tensor order = at::argsort(gathered_index), back = at::argsort(order);
  const at::Tensor qo = qa.index_select(2, order), ko = ka.index_select(2, order), vo = va.index_select(2, order);
  at::Tensor mask;
  if (in.all_segments.defined() || window > 0) {
    const at::Tensor position = at::arange(n * T, gathered_index.options());
    const at::Tensor segments = in.all_segments.defined() ? in.all_segments.index_select(1, order) : at::Tensor();
    mask = allowed_keys(position, position, segments, segments, window);
  }
  const at::Tensor out = at::scaled_dot_product_attention(qo, ko, vo, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt,
                                                          /*dropout_p=*/0.0, /*is_causal=*/!mask.defined(), scale,
                                                          /*enable_gqa=*/ko.size(1) != qo.size(1));
  return all_to_all(out.index_select(2, back), comm, 2, 1);
}

// The group's sum in rank order (the same on every rank); each rank's gradient goes to its own part unchanged.
struct SumOverGroup : torch::autograd::Function<SumOverGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    (void)ctx;
    return reinterpret_cast<ContextParallelComm*>(comm)->all_gather(x.unsqueeze(0).contiguous(), 0).sum(0);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    (void)ctx;
    return {grads[0], at::Tensor()};
  }
};

}  // namespace

at::Tensor sum_over_context_parallel(const at::Tensor& t, ContextParallelComm& comm) {
  return SumOverGroup::apply(t, reinterpret_cast<int64_t>(&comm));
}

at::Tensor context_parallel_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const ContextParallelInputs& in, int64_t window, double scale) {
  SWIFT_ASSERT(in.comm != nullptr, "context-parallel attention needs its group");
  if (in.attention == ContextParallelAttention::kUlysses) return ulysses_attention(q, k, v, in, window, scale);
  // An autograd function's tensor inputs must be defined: no segments travel as empty tensors.
  const auto or_empty = [&](const at::Tensor& t) { return t.defined() ? t : at::empty({0}, q.options().dtype(at::kLong)); };
  return RingAttention::apply(q, k, v, reinterpret_cast<int64_t>(in.comm), or_empty(in.segments), or_empty(in.all_segments),
                              window, scale);
}

}  // namespace swift::model
