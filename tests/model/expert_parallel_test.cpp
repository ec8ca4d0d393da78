// Expert parallelism inside the model: two ranks (threads exchanging through memory) each holding half of a sparse
// layer's experts compute the whole layer's outputs and gradients; a rank reads only its own experts from a folder
// that stores one tensor per expert. (Over real ranks and the trainer: tests/e2e/expert_parallel_test.sh.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "swift/core/error.h"
#include "swift/model/checkpoint.h"
#include "swift/model/expert_parallel.h"
#include "swift/model/moe.h"
#include "test_util.h"

using namespace swift;

namespace {

// Threads standing in for the ranks of a group: each all-to-all posts every rank's parts, waits for all, and takes
// its own.
class MemoryGroup {
 public:
  explicit MemoryGroup(int size) : size_(size), parts_(static_cast<size_t>(size * size)) {}
  int size() const { return size_; }
  at::Tensor all_to_all(int rank, const at::Tensor& rows, const std::vector<int64_t>& send,
                        const std::vector<int64_t>& receive) {
    int64_t begin = 0;
    for (int r = 0; r < size_; ++r) {
      parts_[static_cast<size_t>(rank * size_ + r)] = rows.narrow(0, begin, send[static_cast<size_t>(r)]).clone();
      begin += send[static_cast<size_t>(r)];
    }
    wait_for_all();
    std::vector<at::Tensor> mine;
    for (int r = 0; r < size_; ++r) {
      mine.push_back(parts_[static_cast<size_t>(r * size_ + rank)]);
      EXPECT_EQ(mine.back().size(0), receive[static_cast<size_t>(r)]) << "rank " << rank << " from " << r;
    }
    wait_for_all();  // every rank took its parts before the next exchange overwrites them
    return at::cat(mine);
  }

 private:
  void wait_for_all() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t round = round_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round; });
    }
  }
  int size_;
  std::vector<at::Tensor> parts_;  // [source * size + destination]
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  int64_t round_ = 0;
};

class MemoryComm : public model::ExpertParallelComm {
 public:
  MemoryComm(MemoryGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  at::Tensor all_to_all(const at::Tensor& rows, const std::vector<int64_t>& send,
                        const std::vector<int64_t>& receive) override {
    return group_.all_to_all(rank_, rows, send, receive);
  }

 private:
  MemoryGroup& group_;
  int rank_;
};

model::SparseMoeBlockImpl& sparse_block(model::CausalLM& m) {
  return *m->model->layers[1]->as<model::DecoderLayerImpl>()->moe;  // the tiny config's layer 1 is sparse
}

}  // namespace

// Rank r's tokens through its copy of the layer (experts 2r and 2r + 1 of 4) give the whole layer's outputs on
// them; each rank's experts get the whole batch's gradients of those experts; the routers' gradients add up to the
// whole layer's. Also with one token per rank, where a rank often sends the other nothing.
TEST(ExpertParallel, TwoRanksComputeTheWholeLayer) {
  for (const int64_t tokens : {7, 1}) {
    SCOPED_TRACE(tokens);
    auto whole = test::random_model(test::tiny_config("qwen3_moe"), 11);
    const at::Tensor x = at::randn({2, tokens, 64}, at::TensorOptions().dtype(at::kFloat));
    const at::Tensor weights = at::randn({2, tokens, 64});  // the outputs' gradient: a weighted sum of them
    auto& block = sparse_block(whole);
    (block.forward(x) * weights).sum().backward();
    const at::Tensor want = block.forward(x).detach();

    MemoryGroup group(2);
    std::vector<model::CausalLM> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(test::random_model(test::tiny_config("qwen3_moe"), 11));
      const auto split = model::apply_expert_parallel(ranks.back(), std::make_shared<MemoryComm>(group, r));
      ASSERT_EQ(split.size(), 2u) << "gate_up_proj and down_proj of the one sparse layer";
      EXPECT_EQ(split[0].name, "model.layers.1.mlp.experts.gate_up_proj");
      EXPECT_EQ(split[0].full_size, 4);
      EXPECT_EQ(sparse_block(ranks.back()).experts->gate_up_proj.size(0), 2);
    }
    std::vector<at::Tensor> outputs(2);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        auto& mine = sparse_block(ranks[static_cast<size_t>(r)]);
        const at::Tensor out = mine.forward(x.narrow(0, r, 1));
        (out * weights.narrow(0, r, 1)).sum().backward();
        outputs[static_cast<size_t>(r)] = out.detach();
      });
    for (auto& t : threads) t.join();
    EXPECT_TRUE(at::allclose(at::cat(outputs), want, 1e-5, 1e-6));
    for (int r = 0; r < 2; ++r) {
      auto& mine = sparse_block(ranks[static_cast<size_t>(r)]);
      EXPECT_TRUE(at::allclose(mine.experts->gate_up_proj.grad(), block.experts->gate_up_proj.grad().narrow(0, 2 * r, 2), 1e-5, 1e-6));
      EXPECT_TRUE(at::allclose(mine.experts->down_proj.grad(), block.experts->down_proj.grad().narrow(0, 2 * r, 2), 1e-5, 1e-6));
    }
    const at::Tensor router = sparse_block(ranks[0]).gate->weight.grad() + sparse_block(ranks[1]).gate->weight.grad();
    EXPECT_TRUE(at::allclose(router, block.gate->weight.grad(), 1e-5, 1e-6));
  }
}

// A rank's experts deferred at load are read from the per-expert tensors after the split: only its own.
TEST(ExpertParallel, ARankReadsItsOwnExperts) {
  torch::NoGradGuard no_grad;
  test::TempDir tmp;
  auto whole = test::random_model(test::tiny_config("qwen3_moe"), 4);
  model::save_model(whole, tmp / "m");
  model::LoadOptions options;
  options.placement = [](const std::vector<model::ParameterInfo>& infos) {
    std::vector<model::Placement> where;
    for (const auto& info : infos)
      where.push_back(model::is_expert_parameter(info.name) ? model::Placement::kDeferred : model::Placement::kDevice);
    return where;
  };
  auto rank1 = model::load_model(tmp / "m", options);
  ASSERT_NE(rank1->deferred_weights(), nullptr);
  MemoryGroup group(2);
  const auto split = model::apply_expert_parallel(rank1, std::make_shared<MemoryComm>(group, 1));
  const int64_t bytes = model::read_deferred_weights(rank1, [&](const std::string& name) {
    for (const auto& s : split)
      if (s.name == name) return std::optional<model::WeightSlice>(model::WeightSlice{0, 2, 2});
    return std::optional<model::WeightSlice>();
  });
  const auto& experts = *sparse_block(rank1).experts;
  EXPECT_EQ(bytes, static_cast<int64_t>(experts.gate_up_proj.nbytes() + experts.down_proj.nbytes()));
  EXPECT_TRUE(at::equal(experts.gate_up_proj, sparse_block(whole).experts->gate_up_proj.narrow(0, 2, 2)));
  EXPECT_TRUE(at::equal(experts.down_proj, sparse_block(whole).experts->down_proj.narrow(0, 2, 2)));
}

TEST(ExpertParallel, SaysWhatCannotBeSplit) {
  auto config = model::parse_model_config(test::tiny_config("qwen3_moe"), "test");
  EXPECT_EQ(model::expert_parallel_problem(config, 1), "");
  EXPECT_EQ(model::expert_parallel_problem(config, 4), "");
  EXPECT_NE(model::expert_parallel_problem(config, 3).find("4 experts do not divide by the expert-parallel size 3"),
            std::string::npos);
  auto dense = model::parse_model_config(test::tiny_config("qwen3"), "test");
  EXPECT_NE(model::expert_parallel_problem(dense, 2).find("no mixture-of-experts layers"), std::string::npos);
  EXPECT_TRUE(model::is_expert_parameter("model.layers.3.mlp.experts.gate_up_proj"));
  EXPECT_TRUE(model::is_expert_parameter("model.layers.3.mlp.experts.down_proj"));
  EXPECT_FALSE(model::is_expert_parameter("model.layers.3.mlp.gate.weight"));
  EXPECT_FALSE(model::is_expert_parameter("model.layers.3.mlp.shared_expert.down_proj.weight"));
  auto m = test::random_model(test::tiny_config("qwen3"), 1);
  MemoryGroup group(2);
  EXPECT_THROW(model::apply_expert_parallel(m, std::make_shared<MemoryComm>(group, 0)), UsageError);
}
