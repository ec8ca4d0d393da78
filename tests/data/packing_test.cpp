// --packing: samples bin-packed into one row train exactly as unpacked ones (block-diagonal causal attention,
// position ids restarting per sample, no loss across a sample boundary): per-sample losses and the step's
// gradient match unpacked training in fp32, for a full-attention (qwen3) and a sliding-window (mistral) model.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "swift/train/loss.h"
#include "swift/data/example.h"
#include "swift/data/batch.h"
#include "swift/data/packing.h"
#include "test_util.h"

using namespace swift;

namespace {

std::vector<data::Example> examples() {
  std::vector<data::Example> out;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  for (int64_t len : {9, 5, 12, 7, 3}) {
    data::Example e;
    auto ids = at::randint(0, 128, {len}, gen, at::TensorOptions().dtype(at::kLong));
    for (int64_t i = 0; i < len; ++i) {
      e.input_ids.push_back(ids[i].item<int64_t>());
      e.labels.push_back(i < len / 3 ? -100 : e.input_ids.back());  // loss on the first token too (i = 0 for len 3)
    }
    out.push_back(e);
  }
  return out;
}

int64_t label_tokens(const data::Example& e) {
  int64_t n = 0;
  for (size_t i = 1; i < e.labels.size(); ++i) n += e.labels[i] != -100;
  return n;
}

// Per-token loss [B, T] (position t: label t predicted from logits t-1; 0 where no loss, column 0 is 0).
at::Tensor token_losses(const at::Tensor& logits, const at::Tensor& labels) {
  const auto B = logits.size(0), T = logits.size(1), V = logits.size(2);
  auto l = at::cross_entropy_loss(logits.narrow(1, 0, T - 1).reshape({-1, V}), labels.narrow(1, 1, T - 1).reshape({-1}),
                                  {}, at::Reduction::None, -100)
               .view({B, T - 1});
  return at::cat({at::zeros({B, 1}, l.options()), l}, 1);
}

at::Tensor forward(model::CausalLM& m, const data::Batch& b) {
  model::ForwardArgs args;
  args.input_ids = b.input_ids;
  args.attention_mask = b.attention_mask;
  args.position_ids = b.position_ids;
  args.segment_ids = b.segment_ids;
  return m->forward(args);
}

// The index in `ex` of the sample whose tokens are `ids`.
size_t find_sample(const std::vector<data::Example>& ex, const std::vector<int64_t>& ids) {
  for (size_t i = 0; i < ex.size(); ++i)
    if (ex[i].input_ids == ids) return i;
  ADD_FAILURE() << "packed sample not found";
  return 0;
}

void check_losses_and_grads(const std::string& family) {
  auto m = test::random_model(test::tiny_config(family), 11);
  m->train();
  const auto ex = examples();
  const auto packed = data::pack_examples(ex, 20);
  ASSERT_LT(packed.size(), ex.size());

  // Unpacked: each sample alone; per-sample loss sums and the gradient of their total.
  m->zero_grad();
  std::vector<double> expected(ex.size());
  int64_t tokens = 0;
  for (const auto& e : ex) tokens += label_tokens(e);
  for (size_t i = 0; i < ex.size(); ++i) {
    auto b = data::collate({&ex[i]}, 0);
    EXPECT_FALSE(b.segment_ids.defined());
    auto loss = token_losses(forward(m, b), b.labels).sum();
    expected[i] = loss.item<double>();
    (loss / static_cast<double>(tokens)).backward();
  }
  std::map<std::string, at::Tensor> unpacked_grads;
  for (auto& item : m->named_parameters()) unpacked_grads[item.key()] = item.value().grad().clone();

  // Packed: all rows in one padded batch.
  m->zero_grad();
  std::vector<const data::Example*> rows;
  for (const auto& p : packed) rows.push_back(&p);
  auto b = data::collate(rows, 0);
  ASSERT_TRUE(b.segment_ids.defined());
  EXPECT_EQ(b.label_tokens, tokens);
  auto losses = token_losses(forward(m, b), b.labels);
  (losses.sum() / static_cast<double>(tokens)).backward();
  std::vector<int> seen(ex.size(), 0);
  for (size_t r = 0; r < packed.size(); ++r) {
    const auto& p = packed[r];
    size_t start = 0;
    while (start < p.segments.size()) {
      size_t end = start;
      while (end < p.segments.size() && p.segments[end] == p.segments[start]) ++end;
      const std::vector<int64_t> ids(p.input_ids.begin() + static_cast<long>(start), p.input_ids.begin() + static_cast<long>(end));
      const size_t i = find_sample(ex, ids);
      ++seen[i];
      const double got = losses[static_cast<int64_t>(r)].narrow(0, static_cast<int64_t>(start), static_cast<int64_t>(end - start)).sum().item<double>();
      EXPECT_NEAR(got, expected[i], 1e-5 * std::abs(expected[i])) << family << " sample " << i;
      start = end;
    }
  }
  for (size_t i = 0; i < ex.size(); ++i) EXPECT_EQ(seen[i], 1) << "sample " << i;
  for (auto& item : m->named_parameters()) {
    const auto& g = unpacked_grads[item.key()];
    const double norm = g.norm().item<double>() + 1e-12;
    EXPECT_LE((item.value().grad() - g).norm().item<double>() / norm, 1e-5) << family << " " << item.key();
  }
}

}  // namespace

TEST(Packing, PerSampleLossAndGradientMatchUnpackedQwen3) { check_losses_and_grads("qwen3"); }

TEST(Packing, PerSampleLossAndGradientMatchUnpackedSlidingWindowMistral) { check_losses_and_grads("mistral"); }

TEST(Packing, FirstFitDecreasingIsDeterministicAndKeepsEveryLabel) {
  const auto ex = examples();  // lengths 9, 5, 12, 7, 3
  const auto a = data::pack_examples(ex, 20);
  const auto b = data::pack_examples(ex, 20);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].input_ids, b[i].input_ids);
    EXPECT_EQ(a[i].labels, b[i].labels);
    EXPECT_EQ(a[i].position_ids, b[i].position_ids);
    EXPECT_EQ(a[i].segments, b[i].segments);
  }
  // 12 -> row 0; 9 -> row 1; 7 -> row 0 (19); 5 -> row 1 (14); 3 -> row 1 (17).
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].input_ids.size(), 19u);
  EXPECT_EQ(a[1].input_ids.size(), 17u);
  EXPECT_EQ(a[1].segments, (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(a[1].position_ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3, 4, 0, 1, 2}));
  int64_t before = 0, after = 0;
  size_t total = 0;
  for (const auto& e : ex) before += label_tokens(e), total += e.input_ids.size();
  for (const auto& p : a) {
    after += label_tokens(p);
    EXPECT_LE(p.input_ids.size(), 20u);
    total -= p.input_ids.size();
    // Each sample's first label is -100: nothing is predicted across a boundary.
    for (size_t t = 1; t < p.segments.size(); ++t)
      if (p.segments[t] != p.segments[t - 1]) {
        EXPECT_EQ(p.labels[t], -100);
      }
  }
  EXPECT_EQ(after, before);
  EXPECT_EQ(total, 0u);
  // Length limits: every row fits; a sample longer than the limit gets a row of its own.
  for (int64_t limit : {12, 13, 16}) {
    const auto q = data::pack_examples(ex, limit);
    for (const auto& p : q) EXPECT_LE(static_cast<int64_t>(p.input_ids.size()), limit);
  }
  const auto tight = data::pack_examples(ex, 8);
  size_t longest = 0;
  for (const auto& p : tight) longest = std::max(longest, p.input_ids.size());
  EXPECT_EQ(longest, 12u);
  for (const auto& p : tight)
    if (p.input_ids.size() > 8) {
      EXPECT_EQ(p.segments.back(), 0);
    }
}

TEST(Packing, CollatePadsPackedRows) {
  const auto ex = examples();
  const auto packed = data::pack_examples(ex, 20);
  auto b = data::collate({&packed[0], &packed[1]}, 0);
  EXPECT_EQ(b.input_ids.size(1), 19);
  EXPECT_EQ(b.segment_ids[1][17].item<int64_t>(), -1);  // pad
  EXPECT_EQ(b.position_ids[1][16].item<int64_t>(), 2);
  EXPECT_EQ(b.attention_mask[1].sum().item<int64_t>(), 17);
}

// --padding_free: a micro-batch in one row; a packed row among its examples keeps its samples apart.
TEST(Packing, PackRowConcatenatesAndRenumbersPackedSamples) {
  const auto ex = examples();
  const std::vector<data::Example> packed = data::pack_examples({ex[0], ex[1]}, 64);  // one row of 2 samples
  ASSERT_EQ(packed.size(), 1u);
  const data::Example row = data::pack_row({&ex[2], &packed[0], &ex[4]});
  ASSERT_EQ(row.input_ids.size(), ex[2].input_ids.size() + packed[0].input_ids.size() + ex[4].input_ids.size());
  std::vector<int64_t> starts;
  for (size_t t = 0; t < row.segments.size(); ++t) {
    if (t == 0 || row.segments[t] != row.segments[t - 1]) starts.push_back(static_cast<int64_t>(t));
    if (t > 0) EXPECT_GE(row.segments[t], row.segments[t - 1]);
    EXPECT_EQ(row.position_ids[t], t == static_cast<size_t>(starts.back()) ? 0 : row.position_ids[t - 1] + 1);
  }
  EXPECT_EQ(starts.size(), 4u);  // ex[2], the two packed samples, ex[4]
  EXPECT_EQ(row.segments.back(), 3);
  int64_t labelled = 0;
  for (const int64_t s : starts) EXPECT_EQ(row.labels[static_cast<size_t>(s)], -100);
  for (const auto* e : {&ex[2], &ex[0], &ex[1], &ex[4]}) labelled += label_tokens(*e);
  EXPECT_EQ(data::collate({&row}, 0).label_tokens, labelled);  // the padded batch's targets, no more, no fewer
}
