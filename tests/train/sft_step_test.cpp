// The training step's invariants: k micro-batches of b equal one batch of k*b (fp32, every gradient within 1e-6 in
// relative norm; the loss is normalised by the label
// tokens of the whole step), padding changes nothing, batches are reproducible from (seed, epoch, position),
// and truncation reports what it did.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/core/error.h"
#include "swift/data/builtin_datasets.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/train/loss.h"
#include "swift/data/example.h"
#include "swift/data/batch.h"
#include "swift/data/batch_sampler.h"
#include "test_util.h"

using namespace swift;

namespace {

std::vector<data::Example> examples() { return test::half_prompt_examples({9, 5, 12, 7}); }

// Gradients of the step over `micro` batches, normalised by all their label tokens.
// with_mask false: what swift sft feeds (right padding needs no mask under causal attention).
std::map<std::string, at::Tensor> step_grads(model::CausalLM& m, const std::vector<std::vector<const data::Example*>>& micro,
                                             bool with_mask = true) {
  m->zero_grad();
  std::vector<data::Batch> batches;
  int64_t tokens = 0;
  for (const auto& items : micro) {
    batches.push_back(data::collate(items, 0));
    tokens += batches.back().label_tokens;
  }
  for (auto& b : batches) {
    model::ForwardArgs args;
    args.input_ids = b.input_ids;
    if (with_mask) args.attention_mask = b.attention_mask;
    auto sums = train::causal_lm_loss_sums(m->forward(args), b.labels);
    (sums.loss_sum / static_cast<double>(tokens)).backward();
  }
  std::map<std::string, at::Tensor> grads;
  for (auto& item : m->named_parameters()) grads[item.key()] = item.value().grad().clone();
  return grads;
}

}  // namespace

TEST(SftStep, AccumulationEqualsOneLargeBatch) {
  auto m = test::random_model(test::tiny_config("qwen2"), 9);
  m->train();
  const auto ex = examples();
  auto whole = step_grads(m, {{&ex[0], &ex[1], &ex[2], &ex[3]}});
  auto split = step_grads(m, {{&ex[0], &ex[1]}, {&ex[2], &ex[3]}});
  auto single = step_grads(m, {{&ex[0]}, {&ex[1]}, {&ex[2]}, {&ex[3]}});
  for (const auto& [name, g] : whole) {
    const double norm = g.norm().item<double>() + 1e-12;
    EXPECT_LE((split[name] - g).norm().item<double>() / norm, 1e-6) << name;
    // Single unpadded rows take SDPA's is_causal kernel instead of the masked one: another summation order.
    EXPECT_LE((single[name] - g).norm().item<double>() / norm, 2e-6) << name;
  }
}

// Rows are right-padded: a real token never attends to a later pad, so the training loop leaves the padding mask
// out (and gets the fused causal attention kernel). The gradients must not change.
TEST(SftStep, RightPaddedBatchNeedsNoPaddingMask) {
  auto m = test::random_model(test::tiny_config("qwen3"), 10);
  m->train();
  const auto ex = examples();
  auto masked = step_grads(m, {{&ex[0], &ex[1], &ex[2], &ex[3]}}, true);
  auto causal_only = step_grads(m, {{&ex[0], &ex[1], &ex[2], &ex[3]}}, false);
  for (const auto& [name, g] : masked) {
    const double norm = g.norm().item<double>() + 1e-12;
    EXPECT_LE((causal_only[name] - g).norm().item<double>() / norm, 2e-6) << name;
  }
}

TEST(SftStep, LossSumsCountLabelTokensAndAccuracy) {
  // Logits that put all mass on token 1; labels after the shift: [1, -100, 2] -> 2 tokens, 1 correct.
  auto logits = at::full({1, 4, 3}, -10.0);
  logits.select(2, 1).fill_(10.0);
  auto labels = at::tensor(std::vector<int64_t>{-100, 1, -100, 2}, at::kLong).view({1, 4});
  auto sums = train::causal_lm_loss_sums(logits, labels);
  EXPECT_EQ(sums.tokens, 2);
  EXPECT_EQ(sums.correct, 1);
  const double expected = at::cross_entropy_loss(logits.narrow(1, 0, 3).reshape({3, 3}), labels.narrow(1, 1, 3).reshape({3}),
                                                 {}, at::Reduction::Sum, -100)
                              .item<double>();
  EXPECT_DOUBLE_EQ(sums.loss_sum.item<double>(), expected);
}

TEST(SftStep, LossFromHiddenEqualsFullLogitsLoss) {
  auto m = test::random_model(test::tiny_config("llama"), 12);
  const auto ex = examples();
  auto b = data::collate({&ex[0], &ex[1], &ex[2]}, 0);
  model::ForwardArgs args;
  args.input_ids = b.input_ids;
  args.attention_mask = b.attention_mask;
  auto hidden = m->forward_hidden(args);
  auto full = train::causal_lm_loss_sums(m->logits(hidden), b.labels);
  auto selected = train::causal_lm_loss_sums_from_hidden(hidden, b.labels, [&](const at::Tensor& h) { return m->logits(h); });
  EXPECT_EQ(selected.tokens, full.tokens);
  EXPECT_EQ(selected.correct, full.correct);
  EXPECT_NEAR(selected.loss_sum.item<double>(), full.loss_sum.item<double>(), 1e-4);
  // Same gradients too.
  m->zero_grad();
  full.loss_sum.backward({}, /*retain_graph=*/true);
  std::map<std::string, at::Tensor> g_full;
  for (auto& item : m->named_parameters()) g_full[item.key()] = item.value().grad().clone();
  m->zero_grad();
  selected.loss_sum.backward();
  for (auto& item : m->named_parameters()) {
    const double norm = g_full[item.key()].norm().item<double>() + 1e-12;
    EXPECT_LE((item.value().grad() - g_full[item.key()]).norm().item<double>() / norm, 1e-5) << item.key();
  }
}

TEST(SftStep, CollatePadsRightAndCountsLabels) {
  const auto ex = examples();
  auto b = data::collate({&ex[1], &ex[2]}, 0);
  EXPECT_EQ(b.input_ids.size(1), 12);
  EXPECT_EQ(b.attention_mask[0].sum().item<int64_t>(), 5);
  EXPECT_EQ(b.labels[0][7].item<int64_t>(), -100);  // padding carries no loss
  int64_t expected = 0;
  for (const auto* e : {&ex[1], &ex[2]})
    for (size_t i = 1; i < e->labels.size(); ++i) expected += e->labels[i] != -100;
  EXPECT_EQ(b.label_tokens, expected);
}

TEST(SftStep, SamplerIsReproducibleFromItsPosition) {
  data::BatchSampler a(10, 3, 7), b(10, 3, 7);
  std::vector<std::vector<size_t>> first;
  for (int i = 0; i < 9; ++i) first.push_back(a.next());
  EXPECT_EQ(first[3].size(), 1u);  // a short last batch ends the epoch
  EXPECT_NE(first[0], first[4]);   // epochs are reshuffled
  b.set_position(1, 3);            // epoch 1 after its first batch (first[4])
  for (int i = 5; i < 9; ++i) EXPECT_EQ(b.next(), first[static_cast<size_t>(i)]);
  data::BatchSampler c(10, 3, 8);
  EXPECT_NE(c.next(), first[0]);  // another seed, another order
}

TEST(SftStep, TruncationDeletesOrCutsAndReports) {
  // encode_rows needs a template; truncation itself is checked through the report on pre-encoded lengths.
  EXPECT_EQ(data::parse_truncation("left"), data::Truncation::kLeft);
  EXPECT_THROW(data::parse_truncation("middle"), UsageError);
  data::EncodeReport r;
  r.rows = 5;
  r.kept = 3;
  r.truncated = 1;
  r.deleted_too_long = 2;
  EXPECT_EQ(r.summary(), "5 rows: 3 kept, 1 truncated to --max_length, 2 deleted as longer than --max_length");
}

TEST(SftStep, ParallelEncodingEqualsSerialAndTruncates) {
  auto tok = tokenizer::Tokenizer::load(std::string(SWIFT_SOURCE_DIR) + "/configs/models/qwen3-tiny");
  templates::Template chat(templates::find_template_meta("qwen3"), *tok);
  auto rows = data::builtin_dataset("swift/arithmetic", {});
  data::EncodeReport serial_report, parallel_report;
  auto serial = data::encode_rows(rows, chat, 0, data::Truncation::kDelete, serial_report, "t", 1);
  auto parallel = data::encode_rows(rows, chat, 0, data::Truncation::kDelete, parallel_report, "t", 4);
  ASSERT_EQ(serial.size(), rows.size());
  ASSERT_EQ(parallel.size(), serial.size());
  for (size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(parallel[i].input_ids, serial[i].input_ids);
    EXPECT_EQ(parallel[i].labels, serial[i].labels);
  }
  const auto length = static_cast<int64_t>(serial[0].input_ids.size());
  data::EncodeReport cut;
  auto right = data::encode_rows({rows[0]}, chat, length - 1, data::Truncation::kRight, cut, "t", 2);
  EXPECT_EQ(cut.truncated, 1u);
  EXPECT_EQ(right[0].input_ids, std::vector<int64_t>(serial[0].input_ids.begin(), serial[0].input_ids.end() - 1));
  data::EncodeReport deleted;
  EXPECT_THROW(data::encode_rows({rows[0]}, chat, length - 1, data::Truncation::kDelete, deleted, "t"), DataError);
  EXPECT_EQ(deleted.deleted_too_long, 1u);
}
