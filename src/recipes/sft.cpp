// swift sft / swift pt: supervised fine-tuning and (continued) pretraining, full, LoRA or QLoRA, on the training
// job (train/trainer.h) with the causal LM objective. pt is the same job with plain text instead of a chat template,
// loss on every token, and full fine-tuning by default.
#include "swift/cli/common_setup.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/moe.h"
#include "swift/recipes/commands.h"
#include "swift/train/causal_lm_objective.h"
#include "swift/train/megatron_flags.h"
#include "swift/train/trainer.h"

namespace swift::recipes {

namespace {

train::TrainingFlagDefaults defaults(bool pretrain) {
  train::TrainingFlagDefaults d;
  d.pretrain = pretrain;
  return d;
}

int run(const std::string& command, bool pretrain, const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags(command, train::training_flags(defaults(pretrain)), args);
  cli::apply_common_flags(flags);
  cli::Problems problems;
  const train::TrainingOptions options = train::training_options(flags, problems);
  problems.raise();  // every problem with the command line at once, before anything is loaded
  train::TrainingHooks hooks;
  hooks.make_objective = [](const train::ObjectiveContext& c) {
    train::CausalLmObjectiveOptions objective;
    objective.padding_free = c.options.data.padding_free;
    const train::TrainingOptions& o = c.options;
    if (c.policy->config().is_moe()) {
      const model::MoeConfig& moe = c.policy->config().moe;
      const std::string& family = c.policy->config().model_type;
      objective.num_experts = moe.num_experts;
      objective.router_aux_loss_coef = o.router_aux_loss_coef;
      if (!moe.aux_loss_in_forward && o.router_aux_loss_coef > 0) {  // as ms-swift, whose model returns no aux_loss
        log_info("--router_aux_loss_coef has no effect on ", family,
                 ": transformers' model adds no load-balancing loss, so ms-swift trains it without one (as swift does)");
        objective.router_aux_loss_coef = 0;
      }
      // DeepSeek's routers score by sigmoid or choose within groups: Megatron's loss and drop policies here know the
      // softmax top-k only.
      const bool plain_router = model::RoutingRule::of(moe).plain();
      SWIFT_CHECK(plain_router || o.moe_aux_loss_coeff == 0, UsageError,
                  "--moe_aux_loss_coeff on " + family + " is not available yet (its router scores by " + moe.scoring +
                      (moe.group_scoring.empty() ? "" : " within groups") + ")",
                  "drop --moe_aux_loss_coeff");
      SWIFT_CHECK(plain_router || o.moe_expert_capacity_factor <= 0, UsageError,
                  "--moe_expert_capacity_factor on " + family + " is not available yet (its router chooses experts "
                  "by group and scales their weights)", "drop --moe_expert_capacity_factor (dropless, ms-swift's default)");
      objective.moe_aux_loss_coeff = o.moe_aux_loss_coeff;
      objective.expert_capacity_factor = o.moe_expert_capacity_factor;
      objective.drop_by_position = o.moe_drop_by_position;
      model::CausalLM policy = c.policy;  // a handle: the same module
      model::set_expert_capacity(policy, {o.moe_expert_capacity_factor, o.moe_drop_by_position});
      // Megatron's loss is layer by layer: each pipeline stage adds its own layers' (StageResult::loss).
      // transformers' pools every layer's routers first, which stages cannot. Under context parallelism both count
      // the experts' choices over the whole rows (causal_lm_objective.cpp).
      const auto& p = o.parallel;
      SWIFT_CHECK(objective.router_aux_loss_coef == 0 || p.pp_size == 1, UsageError,
                  "--router_aux_loss_coef with --pp_size " + std::to_string(p.pp_size) +
                      " is not available (transformers' loss pools the routers of every layer, which the stages split)",
                  "use Megatron's layer-by-layer --moe_aux_loss_coeff, which runs under pipeline parallelism");
    } else {
      for (const std::string& flag : train::router_flags_given(o))
        log_info(flag, " has no effect: ", c.policy->config().model_type, " has no mixture-of-experts layers");
    }
    return train::causal_lm_objective(objective);
  };
  return train::run_training(options, hooks);
}

}  // namespace

std::vector<cli::FlagSpec> sft_flags() { return train::training_flags(defaults(false)); }
std::vector<cli::FlagSpec> pt_flags() { return train::training_flags(defaults(true)); }
int run_sft(const std::vector<std::string>& args) { return run("sft", false, args); }
int run_pt(const std::vector<std::string>& args) { return run("pt", true, args); }

}  // namespace swift::recipes
