// swift rlhf's pieces without a reference library: preference rows (prompt/chosen/rejected, rejected_response),
// their encoding and pair batches, the LoRA reference (adapters switched off = the base model), and the losses'
// fixed points (the numbers against ms-swift/TRL are tests/train/preference_parity_test.cpp).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cmath>

#include "swift/core/error.h"
#include "swift/data/builtin_datasets.h"
#include "swift/data/dataset.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/rlhf/preference_loss.h"
#include "swift/data/example.h"
#include "swift/data/batch.h"
#include "swift/distributed/context_parallel_batch.h"
#include "swift/tuners/lora.h"
#include "test_util.h"

using namespace swift;
using nlohmann::json;

namespace {

const std::string kTinyModel = std::string(SWIFT_SOURCE_DIR) + "/configs/models/qwen3-tiny";

json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }
json assistant(const std::string& text) { return {{"role", "assistant"}, {"content", text}}; }

}  // namespace

TEST(PreferenceRows, PromptChosenRejectedAsText) {
  const auto row = data::normalise_row({{"prompt", "1 + 1 ="}, {"chosen", "2"}, {"rejected", "3"}}, "row 1");
  EXPECT_EQ(row["messages"], json::array({user("1 + 1 ="), assistant("2")}));
  EXPECT_EQ(row["rejected_messages"], json::array({user("1 + 1 ="), assistant("3")}));
  EXPECT_FALSE(row.contains("chosen"));
  EXPECT_FALSE(row.contains("prompt"));
}

TEST(PreferenceRows, PromptChosenRejectedAsMessages) {
  // TRL's conversational layout, with a system column.
  const auto row = data::normalise_row({{"system", "be brief"},
                                        {"prompt", json::array({user("hi")})},
                                        {"chosen", json::array({assistant("hello")})},
                                        {"rejected", json::array({assistant("go away")})}},
                                       "row 1");
  const json system = {{"role", "system"}, {"content", "be brief"}};
  EXPECT_EQ(row["messages"], json::array({system, user("hi"), assistant("hello")}));
  EXPECT_EQ(row["rejected_messages"], json::array({system, user("hi"), assistant("go away")}));
  // Implicit prompt: chosen and rejected are whole conversations.
  const auto implicit = data::normalise_row(
      {{"chosen", json::array({user("q"), assistant("a")})}, {"rejected", json::array({user("q"), assistant("b")})}}, "row 2");
  EXPECT_EQ(implicit["messages"], json::array({user("q"), assistant("a")}));
  EXPECT_EQ(implicit["rejected_messages"], json::array({user("q"), assistant("b")}));
}

TEST(PreferenceRows, RejectedResponseFollowsTheLastUserTurn) {
  const auto row = data::normalise_row(
      {{"messages", json::array({user("a"), assistant("b"), user("c"), assistant("d")})}, {"rejected_response", "e"}},
      "row 1");
  EXPECT_EQ(row["rejected_messages"], json::array({user("a"), assistant("b"), user("c"), assistant("e")}));
  EXPECT_FALSE(row.contains("rejected_response"));
  // query/response/rejected_response (ms-swift's ResponsePreprocessor columns).
  const auto pairs = data::normalise_row({{"query", "q"}, {"response", "r"}, {"rejected_response", "x"}}, "row 2");
  EXPECT_EQ(pairs["rejected_messages"], json::array({user("q"), assistant("x")}));
}

TEST(PreferenceRows, BadPairsAreClearErrors) {
  EXPECT_THROW(data::normalise_row({{"query", "q"}, {"response", "r"}, {"rejected_response", "r"}}, "row 1"), DataError);
  EXPECT_THROW(data::normalise_row({{"prompt", "q"}, {"chosen", "r"}, {"rejected", json::array({json(1)})}}, "row 1"),
               DataError);
  try {
    data::normalise_row({{"messages", json::array({assistant("only")})}, {"rejected_response", "x"}}, "f.jsonl row 7");
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("f.jsonl row 7"), std::string::npos) << e.what();
  }
}

TEST(PreferenceRows, BuiltinArithmeticPreferenceChoosesTheRightAnswer) {
  const auto rows = data::builtin_dataset("swift/arithmetic-preference", {});
  ASSERT_EQ(rows.size(), 1000u);
  for (const auto& row : rows) {
    const std::string q = row["messages"][0]["content"];
    const int a = std::stoi(q), b = std::stoi(q.substr(q.find_first_of("+-") + 1));
    const int right = q.find('+') != std::string::npos ? a + b : a - b;
    EXPECT_EQ(row["messages"][1]["content"], std::to_string(right)) << q;
    const int wrong = std::stoi(row["rejected_messages"][1]["content"].get<std::string>());
    EXPECT_NE(wrong, right) << q;
    EXPECT_LE(std::abs(wrong - right), 3) << q;
    EXPECT_LE(a, 9);
    EXPECT_LE(b, 9);
    EXPECT_GE(wrong, 0) << q;
    EXPECT_EQ(row["rejected_messages"][0], row["messages"][0]);
  }
}

TEST(PreferenceEncoding, PairsEncodeBothSidesAndBatchChosenFirst) {
  auto tok = tokenizer::Tokenizer::load(kTinyModel);
  templates::TemplateOptions options;
  options.row_kind = templates::TemplateOptions::RowKind::kPreferencePair;
  options.loss_rule = templates::LossRule::kLastRound;
  templates::Template chat(templates::find_template_meta("qwen3"), *tok, options);
  const json a = data::normalise_row({{"query", "2 + 2 ="}, {"response", "4"}, {"rejected_response", "five"}, {"margin", 0.5}}, "r");
  const json b = data::normalise_row({{"query", "1 + 2 ="}, {"response", "3"}, {"rejected_response", "4"}}, "r");
  data::Example ea, eb;
  ASSERT_EQ(data::encode_row(a, chat, 0, data::Truncation::kDelete, ea, "a"), data::RowFate::kKept);
  ASSERT_EQ(data::encode_row(b, chat, 0, data::Truncation::kDelete, eb, "b"), data::RowFate::kKept);
  const auto rejected = chat.encode(templates::conversation_from_json(a["rejected_messages"]));
  EXPECT_EQ(ea.rejected_input_ids, rejected.input_ids);
  EXPECT_EQ(ea.rejected_labels, rejected.labels);
  EXPECT_EQ(ea.margin, 0.5);
  EXPECT_FALSE(eb.margin.has_value());

  const auto batch = data::collate_pairs({&ea, &eb}, /*pad_id=*/7);
  ASSERT_EQ(batch.input_ids.size(0), 4);
  const auto row_of = [&](int r, const std::vector<int64_t>& ids) {
    return at::equal(batch.input_ids[r].narrow(0, 0, static_cast<int64_t>(ids.size())), at::tensor(ids));
  };
  EXPECT_TRUE(row_of(0, ea.input_ids));
  EXPECT_TRUE(row_of(1, eb.input_ids));
  EXPECT_TRUE(row_of(2, ea.rejected_input_ids));
  EXPECT_TRUE(row_of(3, eb.rejected_input_ids));
  EXPECT_TRUE(at::allclose(batch.margins, at::tensor({0.5f, 0.0f})));
  EXPECT_EQ(batch.attention_mask.sum().item<int64_t>(),
            static_cast<int64_t>(ea.input_ids.size() + eb.input_ids.size() + ea.rejected_input_ids.size() +
                                 eb.rejected_input_ids.size()));

  // Too long on one side: the pair goes (each side is checked against --max_length on its own).
  data::Example dropped;
  const auto longer = static_cast<int64_t>(std::max(ea.input_ids.size(), ea.rejected_input_ids.size()));
  EXPECT_EQ(data::encode_row(a, chat, longer - 1, data::Truncation::kDelete, dropped, "a"), data::RowFate::kTooLong);
  // A row without a rejected reply is an error naming it; so is a margin that is not a number.
  const json plain = data::normalise_row({{"query", "q"}, {"response", "r"}}, "r");
  EXPECT_THROW(data::encode_row(plain, chat, 0, data::Truncation::kDelete, dropped, "f.jsonl row 3"), DataError);
  json bad_margin = a;
  bad_margin["margin"] = "high";
  EXPECT_THROW(data::encode_row(bad_margin, chat, 0, data::Truncation::kDelete, dropped, "r"), DataError);
  // sft reads the same row as the chosen conversation alone.
  templates::Template sft_chat(templates::find_template_meta("qwen3"), *tok);
  data::Example chosen_only;
  data::encode_row(a, sft_chat, 0, data::Truncation::kDelete, chosen_only, "a");
  EXPECT_TRUE(chosen_only.rejected_input_ids.empty());
}

TEST(PreferenceReference, AdaptersDisabledIsTheBaseModel) {
  torch::NoGradGuard no_grad;
  auto base = test::random_model(test::tiny_config("qwen3"), 3);
  auto policy = test::random_model(test::tiny_config("qwen3"), 3);
  tuners::LoraConfig lora;
  lora.init_weights = tuners::LoraInit::kRandom;  // B != 0: the adapter changes the output
  lora.lora_dropout = 0.0;
  tuners::apply_lora(policy, lora);
  policy->eval();
  base->eval();
  model::ForwardArgs args;
  args.input_ids = at::randint(0, 128, {2, 9});
  const auto base_out = base->forward(args), adapted = policy->forward(args);
  EXPECT_GT((adapted - base_out).abs().max().item<double>(), 1e-3);
  {
    tuners::AdaptersDisabled off(policy);
    EXPECT_TRUE(at::allclose(policy->forward(args), base_out, 1e-5, 1e-6));
  }
  EXPECT_TRUE(at::equal(policy->forward(args), adapted));  // the adapter is back
}

TEST(PreferenceLoss, PolicyEqualToReferenceIsChance) {
  // Three pairs of scored sequences; the reference equals the policy.
  rlhf::SequenceLogps s;
  s.logps = at::tensor({-3.0f, -5.0f, -2.0f, -4.0f, -1.0f, -6.0f});
  s.tokens = at::tensor({2.0f, 4.0f, 1.0f, 3.0f, 5.0f, 2.0f});
  s.logit_means = at::zeros({6});
  rlhf::PreferenceConfig dpo;
  auto out = rlhf::preference_loss(dpo, s, &s);
  EXPECT_NEAR(out.loss.item<double>(), std::log(2.0), 1e-6);
  for (const auto& m : out.read()) {
    if (m.name.rfind("rewards/", 0) == 0) {
      EXPECT_EQ(m.sum, 0.0) << m.name;
    }
  }
  // CPO without a reference: chosen (-3, -5, -2) vs rejected (-4, -1, -6): two of three preferred.
  rlhf::PreferenceConfig cpo;
  cpo.method = rlhf::PreferenceMethod::kCpo;
  cpo.cpo_alpha = 0;
  out = rlhf::preference_loss(cpo, s, nullptr, at::zeros({6, 4}));
  double expected = 0;
  for (double d : {1.0, -4.0, 4.0}) expected += -std::log(1 / (1 + std::exp(-0.1 * d))) / 3;
  EXPECT_NEAR(out.loss.item<double>(), expected, 1e-6);
  for (const auto& m : out.read()) {
    if (m.name == "rewards/accuracies") {
      EXPECT_NEAR(m.sum, 2.0 / 3, 1e-6);
    }
  }
}

TEST(PreferenceLoss, BadSettingsNameTheFlag) {
  rlhf::PreferenceConfig c;
  c.loss_type = "kto_pair";
  EXPECT_THROW(rlhf::validate(c), UsageError);
  c.loss_type = "sigmoid";
  c.beta = 0;
  EXPECT_THROW(rlhf::validate(c), UsageError);
  c.beta = 0.1;
  c.label_smoothing = 0.5;
  EXPECT_THROW(rlhf::validate(c), UsageError);
}

TEST(PreferenceRows, UnpairedPromptCompletionMessages) {
  // TRL's unpaired (KTO) layout with message lists.
  const auto row = data::normalise_row({{"prompt", json::array({user("hi")})},
                                        {"completion", json::array({assistant("hello")})},
                                        {"label", true}},
                                       "row 1");
  EXPECT_EQ(row["messages"], json::array({user("hi"), assistant("hello")}));
  EXPECT_EQ(row["label"], true);
  EXPECT_FALSE(row.contains("completion"));
}

TEST(PreferenceEncoding, LabelledRepliesCarryTheirLabelAndKlRow) {
  auto tok = tokenizer::Tokenizer::load(kTinyModel);
  templates::TemplateOptions options;
  options.row_kind = templates::TemplateOptions::RowKind::kLabelledReply;
  templates::Template chat(templates::find_template_meta("qwen3"), *tok, options);
  json row = {{"messages", json::array({user("hi"), assistant("hello")})},
              {"kl_messages", json::array({user("hi"), assistant("bye")})},
              {"label", false}};
  data::Example e;
  ASSERT_EQ(data::encode_row(row, chat, 0, data::Truncation::kDelete, e, "r"), data::RowFate::kKept);
  EXPECT_EQ(e.desirable, false);
  EXPECT_EQ(e.rejected_input_ids, chat.encode(templates::conversation_from_json(row["kl_messages"])).input_ids);
  row["label"] = 1;  // ms-swift's bool(label) of 0/1
  ASSERT_EQ(data::encode_row(row, chat, 0, data::Truncation::kDelete, e, "r"), data::RowFate::kKept);
  EXPECT_EQ(e.desirable, true);
  const auto batch = data::collate_pairs({&e, &e}, 0);
  EXPECT_TRUE(at::equal(batch.desirable, at::tensor({1, 1}).to(at::kBool)));
  // A label that is text, or missing, is an error naming the row (never a silent false).
  for (const json& bad : {json("false"), json(2)}) {
    row["label"] = bad;
    EXPECT_THROW(data::encode_row(row, chat, 0, data::Truncation::kDelete, e, "f.jsonl row 4"), DataError);
  }
  row.erase("label");
  EXPECT_THROW(data::encode_row(row, chat, 0, data::Truncation::kDelete, e, "f.jsonl row 4"), DataError);
}

TEST(PreferenceLoss, KtoWeighsDesirableAndUndesirableReplies) {
  // Reference == policy on the replies, and no KL: every loss is 1 - σ(0) = 0.5, weighted.
  rlhf::SequenceLogps s;
  s.logps = at::tensor({-3.0f, -5.0f, -2.0f});
  s.tokens = at::tensor({2.0f, 4.0f, 1.0f});
  s.logit_means = at::zeros({3});
  s.vocab_size = 10;
  rlhf::PreferenceConfig kto;
  kto.method = rlhf::PreferenceMethod::kKto;
  kto.loss_type = "kto";
  kto.desirable_weight = 2.0;
  kto.undesirable_weight = 0.5;
  const auto out = rlhf::kto_loss(kto, s, s, &s, &s, at::tensor({1, 0, 1}).to(at::kBool));
  EXPECT_NEAR(out.loss.item<double>(), (2 * 0.5 + 0.5 * 0.5 + 2 * 0.5) / 3, 1e-6);
  for (const auto& m : out.read()) {
    if (m.name == "logps/chosen") {
      EXPECT_EQ(m.sum, -5.0);
      EXPECT_EQ(m.count, 2.0);
    }
    if (m.name == "kl") {
      EXPECT_EQ(m.sum, 0.0);
    }
  }
}

// Rows padded for sequence parallelism (distributed::context_parallel_batch: labels shifted to the positions that
// predict them, a pad column added, per-row fields kept) give the same per-row sums as the collated rows.
TEST(PreferenceLoss, PaddedRowsWithShiftedLabelsScoreAsTheCollatedOnes) {
  at::manual_seed(3);
  const int64_t R = 2, T = 5, C = 8, V = 11;
  const at::Tensor head = at::randn({V, C});
  const auto lm_head = [&](const at::Tensor& h) { return at::linear(h, head); };
  data::Batch batch;
  batch.input_ids = at::randint(V, {R, T}, at::kLong);
  batch.labels = batch.input_ids.clone();
  batch.labels.narrow(1, 0, 2).fill_(-100);  // the prompt
  batch.labels[1][4] = -100;                  // a pad of the shorter row
  batch.attention_mask = batch.labels.ne(-100).to(at::kLong);
  batch.margins = at::tensor({0.5, 1.5});
  const data::Batch padded = distributed::context_parallel_batch(batch, 0, 1, /*share_multiple=*/2);
  ASSERT_EQ(padded.input_ids.size(1), 6);
  ASSERT_TRUE(padded.labels_shifted);
  ASSERT_TRUE(padded.margins.defined() && padded.margins.equal(batch.margins));
  const at::Tensor hidden = at::randn({R, 6, C});
  const auto whole = rlhf::sequence_logps_from_hidden(hidden.narrow(1, 0, T), batch.labels, lm_head, true);
  const auto shifted = rlhf::sequence_logps_from_hidden(hidden, padded.labels, lm_head, true, {}, true);
  EXPECT_TRUE(at::allclose(whole.logps, shifted.logps, 1e-6, 1e-6));
  EXPECT_TRUE(whole.tokens.equal(shifted.tokens));
  EXPECT_TRUE(at::allclose(whole.logit_means, shifted.logit_means, 1e-6, 1e-6));
  EXPECT_EQ(whole.tokens[0].item<float>(), 3.0f);  // positions 1..3 predict labels 2..4
}
