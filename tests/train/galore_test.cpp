// GaLore: swift's GaLoreAdamW against galore-torch's on the same parameters, gradients and learning rates
// (tests/train/galore_golden.safetensors, written by make_galore_golden.py), every projection type and
// projection refreshes included; a resumed optimizer continues exactly; its state file's checks; which
// parameters are projected; the flags.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "swift/cli/flags.h"
#include "swift/core/error.h"
#include "swift/io/safetensors.h"
#include "swift/recipes/commands.h"
#include "swift/train/adamw.h"
#include "swift/train/galore_adamw.h"
#include "swift/train/optimizer_options.h"
#include "test_util.h"

using namespace swift;
using namespace swift::train;

namespace {

const std::string kGolden = std::string(SWIFT_SOURCE_DIR) + "/tests/train/galore_golden.safetensors";

struct GoldenCase {
  std::string name;
  std::optional<GaLoreSettings> galore;
  double weight_decay = 0;
  double eps = 0;  // Adam's eps for this case (make_galore_golden.py's CASE_EPS says why one differs)
};

struct Golden {
  std::shared_ptr<io::SafetensorsFile> file;
  std::vector<GoldenCase> cases;
  std::vector<double> lrs;
  AdamWHyper hyper;
  int steps = 0;
};

Golden load_golden() {
  Golden g;
  g.file = io::SafetensorsFile::open(kGolden);
  const auto& meta = g.file->metadata();
  for (const auto& c : nlohmann::json::parse(meta.at("cases"))) {
    GoldenCase gc{c["name"].get<std::string>(), std::nullopt, c["weight_decay"].get<double>(), c["eps"].get<double>()};
    if (!c["galore"].is_null()) {
      GaLoreSettings s;
      s.rank = c["galore"]["rank"].get<int64_t>();
      s.update_proj_gap = c["galore"]["update_proj_gap"].get<int64_t>();
      s.scale = c["galore"]["scale"].get<double>();
      s.projection = parse_galore_projection(c["galore"]["proj_type"].get<std::string>());
      gc.galore = s;
    }
    g.cases.push_back(gc);
  }
  const auto betas = nlohmann::json::parse(meta.at("betas"));
  g.hyper = AdamWHyper{betas[0].get<double>(), betas[1].get<double>(), std::stod(meta.at("eps"))};
  g.steps = std::stoi(meta.at("steps"));
  const at::Tensor lrs = g.file->get("lrs");
  for (int64_t i = 0; i < lrs.numel(); ++i) g.lrs.push_back(lrs[i].item<double>());
  return g;
}

std::unique_ptr<GaLoreAdamW> make_optimizer(const GoldenCase& c, const AdamWHyper& hyper, const at::Tensor& param) {
  GaLoreGroup group{{{c.name, param}}, c.weight_decay, c.galore.has_value()};
  AdamWHyper case_hyper = hyper;
  case_hyper.eps = c.eps;
  return std::make_unique<GaLoreAdamW>(std::vector<GaLoreGroup>{group}, case_hyper, c.galore.value_or(GaLoreSettings{}));
}

// Steps [from, to) of a golden case: gradient and learning rate as galore-torch had them.
void run_steps(const Golden& g, const GoldenCase& c, GaLoreAdamW& opt, at::Tensor& param, int from, int to) {
  for (int k = from; k < to; ++k) {
    param.mutable_grad() = g.file->get(c.name + ".grad." + std::to_string(k + 1)).clone();
    opt.set_lr(g.lrs[static_cast<size_t>(k)]);
    opt.step();
  }
}

double max_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

TEST(GaLore, EqualsGaloreTorchAtEveryStep) {
  const Golden g = load_golden();
  ASSERT_EQ(g.cases.size(), 10u);
  for (const auto& c : g.cases) {
    at::Tensor param = g.file->get(c.name + ".param.0").clone();
    auto opt = make_optimizer(c, g.hyper, param);
    for (int k = 0; k < g.steps; ++k) {
      run_steps(g, c, *opt, param, k, k + 1);
      const at::Tensor want = g.file->get(c.name + ".param." + std::to_string(k + 1));
      EXPECT_LE(max_diff(param, want), 1e-6) << c.name << " after step " << k + 1;
    }
  }
}

TEST(GaLore, ResumedOptimizerContinuesExactly) {
  const Golden g = load_golden();
  test::TempDir dir("galore");
  for (const auto& c : g.cases) {
    at::Tensor param = g.file->get(c.name + ".param.0").clone();
    auto first = make_optimizer(c, g.hyper, param);
    run_steps(g, c, *first, param, 0, 4);  // past a projection refresh, before the next
    first->save(dir / (c.name + ".safetensors"));
    at::Tensor resumed = param.clone();
    auto second = make_optimizer(c, g.hyper, resumed);
    second->load(dir / (c.name + ".safetensors"));
    run_steps(g, c, *second, resumed, 4, g.steps);
    run_steps(g, c, *first, param, 4, g.steps);
    EXPECT_EQ(max_diff(resumed, param), 0.0) << c.name;
    EXPECT_LE(max_diff(resumed, g.file->get(c.name + ".param." + std::to_string(g.steps))), 1e-6) << c.name;
  }
}

TEST(GaLore, StateIsLowRankAndItsFileIsChecked) {
  GaLoreSettings s;
  s.rank = 4;
  at::Tensor w = at::randn({32, 16});
  GaLoreAdamW opt({{{{"w", w}}, 0.0, true}}, AdamWHyper{}, s);
  // Before any step: the plan. Moments [32, 4] twice and the basis [4, 16], against AdamW's 2 x [32, 16].
  EXPECT_EQ(opt.planned_state_bytes(), (2 * 32 * 4 + 4 * 16) * 4);
  w.mutable_grad() = at::randn({32, 16});
  opt.set_lr(1e-3);
  opt.step();
  int64_t held = 0;
  for (const auto& [name, t] : opt.state_tensors())
    if (name != "w.step") held += t.numel() * static_cast<int64_t>(t.element_size());
  EXPECT_EQ(held, opt.planned_state_bytes());

  test::TempDir dir("galore-state");
  opt.save(dir / "galore.safetensors");
  // Another rank: the moments no longer fit.
  GaLoreSettings other = s;
  other.rank = 8;
  at::Tensor w2 = w.clone();
  GaLoreAdamW wrong_rank({{{{"w", w2}}, 0.0, true}}, AdamWHyper{}, other);
  EXPECT_THROW(wrong_rank.load(dir / "galore.safetensors"), DataError);
  // AdamW's file is not GaLore's, nor the other way round.
  train::AdamW adamw({{{{"w", w2}}, 0.0}}, AdamWHyper{});
  EXPECT_THROW(adamw.load(dir / "galore.safetensors"), DataError);
  w2.mutable_grad() = at::randn({32, 16});
  adamw.set_lr(1e-3);
  adamw.step();
  adamw.save(dir / "adamw.safetensors");
  GaLoreAdamW galore_again({{{{"w", w2}}, 0.0, true}}, AdamWHyper{}, s);
  EXPECT_THROW(galore_again.load(dir / "adamw.safetensors"), DataError);
}

TEST(GaLore, ProjectsTheDecoderLinearLayers) {
  GaLoreOptions o;
  const at::Tensor matrix = at::zeros({4, 4}), vector = at::zeros({4});
  EXPECT_TRUE(galore_projects(o, "model.layers.0.self_attn.q_proj.weight", matrix));
  EXPECT_TRUE(galore_projects(o, "model.layers.1.mlp.down_proj.weight", matrix));
  EXPECT_FALSE(galore_projects(o, "model.layers.0.self_attn.q_proj.bias", vector));
  EXPECT_FALSE(galore_projects(o, "model.layers.0.input_layernorm.weight", vector));
  EXPECT_FALSE(galore_projects(o, "lm_head.weight", matrix));
  EXPECT_FALSE(galore_projects(o, "model.embed_tokens.weight", matrix));
  EXPECT_FALSE(galore_projects(o, "output.weight", matrix));  // InternLM2's head and embedding
  EXPECT_FALSE(galore_projects(o, "model.tok_embeddings.weight", matrix));
  EXPECT_TRUE(galore_projects(o, "model.layers.0.attention.wqkv.weight", matrix));
  o.with_embedding = true;
  EXPECT_TRUE(galore_projects(o, "model.embed_tokens.weight", matrix));
  EXPECT_TRUE(galore_projects(o, "model.tok_embeddings.weight", matrix));
  o.target_modules = {"q_proj", "v_proj"};
  EXPECT_TRUE(galore_projects(o, "model.layers.0.self_attn.v_proj.weight", matrix));
  EXPECT_FALSE(galore_projects(o, "model.layers.0.mlp.up_proj.weight", matrix));
}

TEST(GaLore, FlagsAsMsSwiftAndTransformersSpellThem) {
  auto options = [](std::vector<std::string> args) {
    cli::Problems problems;
    const auto flags = cli::parse_flags("sft", recipes::sft_flags(), args);
    auto o = galore_options(flags, /*full_training=*/true, problems);
    problems.raise();
    return o;
  };
  EXPECT_FALSE(options({}).has_value());
  EXPECT_FALSE(options({"--optim", "adamw_torch_fused"}).has_value());
  // The seeds' line: --galore_update_interval is --galore_update_proj_gap.
  const auto seeds = options({"--optim", "galore_adamw", "--galore_rank", "64", "--galore_update_interval", "500",
                              "--galore_scale", "0.1"});
  ASSERT_TRUE(seeds.has_value());
  EXPECT_EQ(seeds->settings.rank, 64);
  EXPECT_EQ(seeds->settings.update_proj_gap, 500);
  EXPECT_DOUBLE_EQ(seeds->settings.scale, 0.1);
  // ms-swift's defaults.
  const auto defaults = options({"--use_galore", "true"});
  EXPECT_EQ(defaults->settings.rank, 128);
  EXPECT_EQ(defaults->settings.update_proj_gap, 50);
  EXPECT_DOUBLE_EQ(defaults->settings.scale, 1.0);
  EXPECT_EQ(defaults->settings.projection, GaLoreProjection::kStd);
  // transformers' spelling.
  const auto hf = options({"--optim", "galore_adamw", "--optim_target_modules", "attn", "mlp", "--optim_args",
                           "rank=16, update_proj_gap=200, scale=0.25, proj_type=left"});
  EXPECT_EQ(hf->settings.rank, 16);
  EXPECT_EQ(hf->settings.update_proj_gap, 200);
  EXPECT_DOUBLE_EQ(hf->settings.scale, 0.25);
  EXPECT_EQ(hf->settings.projection, GaLoreProjection::kLeft);
  EXPECT_EQ(hf->target_modules, (std::vector<std::string>{"attn", "mlp"}));
  // What is not there says so.
  EXPECT_THROW(options({"--optim", "galore_adamw_8bit"}), UsageError);
  EXPECT_THROW(options({"--optim", "sgd"}), UsageError);
  EXPECT_THROW(options({"--use_galore", "true", "--galore_proj_type", "diagonal"}), UsageError);
  EXPECT_THROW(options({"--use_galore", "true", "--galore_rank", "0"}), UsageError);
  EXPECT_THROW(options({"--optim", "galore_adamw", "--optim_args", "rank=x"}), UsageError);
  cli::Problems problems;
  galore_options(cli::parse_flags("sft", recipes::sft_flags(), {"--use_galore", "true"}), /*full_training=*/false, problems);
  EXPECT_THROW(problems.raise(), UsageError);
}
