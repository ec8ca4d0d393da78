// Training-step speed of swift's mixture-of-experts layers: forward + backward tokens/s of a model folder on a fixed
// batch (the cross entropy over every position), and the share of each step the sparse layers spend routing (the
// router, the top-k, sorting tokens by expert and putting their outputs back) rather than in the experts' grouped
// matrix products. bench/bench_moe.py runs transformers on the same folder and batch. Prints one JSON line.
//   swift_bench_moe --model DIR [--batch 4] [--seq 256] [--threads N] [--steps 5]
#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "swift/cli/flags.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/model/checkpoint.h"
#include "swift/model/moe.h"

using namespace swift;

namespace {

double best_seconds(int64_t repeat, const std::function<void()>& fn) {
  fn();  // warm-up
  double best = 1e30;
  for (int64_t r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    using cli::FlagType;
    const std::vector<cli::FlagSpec> specs = {
        {"model", FlagType::kString, "", "model folder (a mixture-of-experts family)"},
        {"batch", FlagType::kInt, "4", "rows"},
        {"seq", FlagType::kInt, "256", "tokens per row"},
        {"threads", FlagType::kInt, "0", "intra-op threads (0: OMP_NUM_THREADS, else cores)"},
        {"steps", FlagType::kInt, "5", "timed steps (the best is reported)"},
    };
    auto flags = cli::parse_flags("bench", specs, std::vector<std::string>(argv + 1, argv + argc));
    const int threads = configure_threads(static_cast<int>(flags.integer("threads")));
    model::CausalLM m = model::load_model(flags.str("model"), {});
    m->train();
    const auto& c = m->config();
    SWIFT_CHECK(c.is_moe(), UsageError, "the model has no mixture-of-experts layer", "pass a qwen3_moe/mixtral folder");
    const int64_t B = flags.integer("batch"), T = flags.integer("seq"), steps = flags.integer("steps");
    const at::Tensor ids = at::arange(B * T, at::kLong).mul(104729).remainder(c.vocab_size).view({B, T});

    // The whole step, as a training step computes it.
    const double step = best_seconds(steps, [&] {
      m->zero_grad();
      model::ForwardArgs args;
      args.input_ids = ids;
      const at::Tensor logits = m->forward(args);
      at::cross_entropy_loss(logits.narrow(1, 0, T - 1).reshape({-1, c.vocab_size}),
                             ids.narrow(1, 1, T - 1).reshape({-1}))
          .backward();
    });

    // Each sparse layer on its own (the same tokens' hidden states), and its experts' two grouped products alone on
    // the same rows sorted by expert: the difference is the routing.
    const at::Tensor hidden = at::randn({B, T, c.hidden_size}, at::TensorOptions().dtype(m->dtype())) * 0.5;
    double layers = 0, products = 0;
    for (size_t i = 0; i < m->model->layers->size(); ++i) {
      auto block = m->model->layers[i]->as<model::DecoderLayerImpl>()->moe;
      if (!block) continue;
      layers += best_seconds(steps, [&] {
        const at::Tensor x = hidden.clone().requires_grad_(true);
        const at::Tensor y = block->forward(x);
        y.backward(at::ones_like(y));  // a dense gradient, as the next layer's would be
      });
      at::Tensor rows, offsets;
      {
        at::NoGradGuard no_grad;
        const auto [weights, experts] = model::route_top_k(block->gate(hidden.view({-1, c.hidden_size})),
                                                           c.moe.experts_per_token, c.moe.norm_topk_prob);
        const at::Tensor flat = experts.reshape({-1});
        const at::Tensor order = at::argsort(flat, /*stable=*/true);
        rows = hidden.view({-1, c.hidden_size}).index_select(0, at::floor_divide(order, c.moe.experts_per_token));
        offsets = at::cumsum(at::bincount(flat, {}, c.moe.num_experts), 0).to(at::kInt);
      }
      auto& experts = *block->experts;
      products += best_seconds(steps, [&] {
        const at::Tensor x = rows.clone().requires_grad_(true);
        const auto halves = model::grouped_matmul(x, experts.gate_up_proj.transpose(1, 2), offsets).chunk(2, -1);
        const at::Tensor y = model::grouped_matmul(at::silu(halves[0]) * halves[1], experts.down_proj.transpose(1, 2), offsets);
        y.backward(at::ones_like(y));
      });
    }
    std::printf("{\"engine\": \"swift\", \"threads\": %d, \"tokens_s\": %.1f, \"step_s\": %.4f, "
                "\"sparse_layers_s\": %.4f, \"expert_products_s\": %.4f, \"routing_share\": %.4f}\n",
                threads, static_cast<double>(B * T) / step, step, layers, products,
                std::max(0.0, layers - products) / step);
    return 0;
  } catch (const UserError& e) {
    std::fprintf(stderr, "error: %s\nhint: %s\n", e.what(), e.hint().c_str());
    return static_cast<int>(e.code());
  }
}
