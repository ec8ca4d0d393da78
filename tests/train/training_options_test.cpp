// A training command's flags as typed options (train/training_options.h, rlhf/rlhf_options.h): defaults as
// ms-swift's, the precision each combination resolves to, every problem reported at once, and rlhf's own table.
#include <gtest/gtest.h>

#include "swift/rlhf/rlhf_options.h"
#include "swift/train/training_options.h"

using namespace swift;

namespace {

train::TrainingOptions sft(std::vector<std::string> args, bool pretrain = false) {
  train::TrainingFlagDefaults defaults;
  defaults.pretrain = pretrain;
  const auto flags = cli::parse_flags(pretrain ? "pt" : "sft", train::training_flags(defaults), args);
  cli::Problems problems;
  auto options = train::training_options(flags, problems);
  problems.raise();
  return options;
}

std::string problems_of(std::vector<std::string> args) {
  const auto flags = cli::parse_flags("sft", train::training_flags({}), args);
  cli::Problems problems;
  train::training_options(flags, problems);
  try {
    problems.raise();
  } catch (const UserError& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST(TrainingOptions, DefaultsAreMsSwifts) {
  const auto o = sft({"--model", "m", "--dataset", "d.jsonl"});
  EXPECT_EQ(o.tuner.type, train::TrainType::kLora);
  EXPECT_EQ(o.tuner.lora.r, 8);
  EXPECT_DOUBLE_EQ(o.tuner.lora.lora_dropout, 0.05);
  EXPECT_DOUBLE_EQ(o.optimizer.learning_rate, 1e-4);
  EXPECT_DOUBLE_EQ(o.optimizer.weight_decay, 0.1);
  EXPECT_EQ(o.schedule.type, train::LrSchedulerType::kCosine);
  EXPECT_EQ(o.loop.save_steps, 500);
  EXPECT_EQ(o.loop.eval_steps, 500);  // 0: at --save_steps
  EXPECT_EQ(o.loop.output_dir.filename(), "m");
  EXPECT_EQ(o.data.loss_scale, "default");
  EXPECT_TRUE(o.data.use_chat_template);
  EXPECT_EQ(o.data.data_seed, 42u);
  EXPECT_EQ(o.parallel.zero.stage, 0);
  const auto pt = sft({"--model", "m", "--dataset", "d.jsonl"}, /*pretrain=*/true);
  EXPECT_EQ(pt.tuner.type, train::TrainType::kFull);
  EXPECT_DOUBLE_EQ(pt.optimizer.learning_rate, 1e-5);
  EXPECT_EQ(pt.data.loss_scale, "all");
  EXPECT_FALSE(pt.data.use_chat_template);
}

TEST(TrainingOptions, PrecisionResolvesAsTheTrainer) {
  // Full fine-tuning keeps fp32 masters; bf16 weights mean bf16 compute and checkpoints.
  auto full = sft({"--model", "m", "--dataset", "d", "--train_type", "full", "--torch_dtype", "bfloat16"});
  EXPECT_EQ(full.model.load_dtype, c10::kFloat);
  EXPECT_EQ(full.model.autocast, c10::kBFloat16);
  EXPECT_EQ(full.model.save_dtype, c10::kBFloat16);
  EXPECT_FALSE(full.model.loss_scaling);
  // LoRA keeps the base in --torch_dtype; float16 scales the loss.
  auto lora = sft({"--model", "m", "--dataset", "d", "--torch_dtype", "float16"});
  EXPECT_EQ(lora.model.load_dtype, c10::kHalf);
  EXPECT_FALSE(lora.model.autocast);
  EXPECT_TRUE(lora.model.loss_scaling);
  // --bf16 over fp32 weights: mixed precision.
  auto mixed = sft({"--model", "m", "--dataset", "d", "--torch_dtype", "float32", "--bf16", "true"});
  EXPECT_EQ(mixed.model.load_dtype, c10::kFloat);
  EXPECT_EQ(mixed.model.autocast, c10::kBFloat16);
  // QLoRA alone means NF4.
  auto qlora = sft({"--model", "m", "--dataset", "d", "--train_type", "qlora"});
  ASSERT_TRUE(qlora.tuner.quantization);
  EXPECT_EQ(qlora.tuner.quantization->bits, 4);
}

TEST(TrainingOptions, EveryProblemAtOnce) {
  const std::string m = problems_of({"--train_type", "foo", "--bf16", "true", "--fp16", "true",
                                     "--lr_scheduler_type", "sawtooth", "--streaming", "true"});
  EXPECT_NE(m.find("--train_type foo is not available"), std::string::npos) << m;
  EXPECT_NE(m.find("--bf16 and --fp16 are both true"), std::string::npos) << m;
  EXPECT_NE(m.find("sawtooth"), std::string::npos) << m;
  EXPECT_NE(m.find("needs --model"), std::string::npos) << m;
  EXPECT_NE(m.find("needs --dataset"), std::string::npos) << m;
  EXPECT_NE(m.find("--streaming needs --max_steps"), std::string::npos) << m;
  // One problem alone keeps its own message.
  EXPECT_EQ(problems_of({"--dataset", "d"}), "swift sft needs --model");
}

TEST(RlhfOptions, OwnTableAndMethodDefaults) {
  const auto table = rlhf::rlhf_flags();
  auto find = [&](const std::string& name) {
    return *std::find_if(table.begin(), table.end(), [&](const cli::FlagSpec& f) { return f.name == name; });
  };
  EXPECT_EQ(find("lora_dropout").default_value, "0");
  EXPECT_EQ(find("loss_scale").default_value, "");
  EXPECT_EQ(find("rlhf_type").default_value, "dpo");
  auto parse = [&](std::vector<std::string> args) {
    return rlhf::rlhf_options(cli::parse_flags("rlhf", table, args));
  };
  const auto dpo = parse({"--model", "m", "--dataset", "d"});
  EXPECT_DOUBLE_EQ(dpo.preference.beta, 0.1);
  EXPECT_EQ(dpo.preference.loss_type, "sigmoid");
  EXPECT_EQ(dpo.training.data.loss_scale, "last_round");
  EXPECT_EQ(dpo.training.data.row_kind, templates::TemplateOptions::RowKind::kPreferencePair);
  const auto simpo = parse({"--model", "m", "--dataset", "d", "--rlhf_type", "simpo"});
  EXPECT_DOUBLE_EQ(simpo.preference.beta, 2.0);
  EXPECT_EQ(simpo.preference.loss_type, "simpo");
  const auto orpo = parse({"--model", "m", "--dataset", "d", "--rlhf_type", "orpo"});
  EXPECT_EQ(orpo.training.data.loss_scale, "default");
  const auto kto = parse({"--model", "m", "--dataset", "d", "--rlhf_type", "kto"});
  EXPECT_EQ(kto.training.data.row_kind, templates::TemplateOptions::RowKind::kLabelledReply);
  try {
    parse({"--model", "m", "--dataset", "d", "--rlhf_type", "rm", "--ref_model", "r", "--packing", "true"});
    FAIL() << "expected the problems";
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find("--ref_model is not used"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("--packing does not apply to swift rlhf"), std::string::npos) << e.message();
  }
}

namespace {

// swift rlhf --rlhf_type TYPE's options from --model m --dataset d and `args`.
rlhf::RlhfOptions rlhf_of(const std::string& type, std::vector<std::string> args) {
  std::vector<std::string> all = {"--model", "m", "--dataset", "d", "--rlhf_type", type};
  all.insert(all.end(), args.begin(), args.end());
  return rlhf::rlhf_options(cli::parse_flags("rlhf", rlhf::rlhf_flags(), all));
}

// Those flags are refused with a message holding `says`.
void expect_refused(const std::string& type, std::vector<std::string> args, const std::string& says) {
  try {
    rlhf_of(type, std::move(args));
    ADD_FAILURE() << "expected: " << says;
  } catch (const UserError& e) {
    EXPECT_NE(e.message().find(says), std::string::npos) << e.message();
  }
}

}  // namespace

// GRPO's KL placement and reward sources, as ms-swift decides them: --kl_in_reward by estimator (off with gdpo and
// at beta 0), reward models after the functions (weights one per each, names the folders'), dynamic sampling.
TEST(RlhfOptions, GrpoKlInRewardAndRewardModels) {
  const auto parse = [](std::vector<std::string> args) { return rlhf_of("grpo", std::move(args)); };
  EXPECT_FALSE(parse({"--reward_funcs", "format"}).grpo.kl_in_reward);
  EXPECT_TRUE(parse({"--reward_funcs", "format", "--advantage_estimator", "rloo"}).grpo.kl_in_reward);
  EXPECT_TRUE(parse({"--reward_funcs", "format", "--advantage_estimator", "reinforce_plus_plus"}).grpo.kl_in_reward);
  EXPECT_TRUE(parse({"--reward_funcs", "format", "--kl_in_reward", "true"}).grpo.kl_in_reward);
  EXPECT_FALSE(parse({"--reward_funcs", "format", "--advantage_estimator", "rloo", "--beta", "0"}).grpo.kl_in_reward);
  EXPECT_FALSE(parse({"--reward_funcs", "format", "--advantage_estimator", "rloo", "--scale_rewards", "gdpo"}).grpo.kl_in_reward);
  const auto dynamic = parse({"--reward_funcs", "format", "--dynamic_sample", "true", "--max_resample_times", "5"});
  EXPECT_TRUE(dynamic.grpo.dynamic_sample);
  EXPECT_EQ(dynamic.grpo.max_resample_times, 5);

  const auto rm = parse({"--reward_funcs", "format", "--reward_model", "/models/rm/checkpoint-60/", "--reward_weights", "1", "0.5"});
  ASSERT_EQ(rm.grpo.reward_models.size(), 1u);
  EXPECT_EQ(rlhf::reward_names(rm.grpo), (std::vector<std::string>{"Format", "checkpoint-60"}));
  EXPECT_EQ(rm.grpo.reward_weights, (std::vector<double>{1, 0.5}));
  EXPECT_EQ(parse({"--reward_model", "/models/rm"}).grpo.reward_weights, (std::vector<double>{1}))
      << "a reward model alone is enough";
  const auto refused = [](std::vector<std::string> args, const std::string& says) { expect_refused("grpo", std::move(args), says); };
  refused({}, "needs --reward_funcs or --reward_model");
  refused({"--reward_model", "/models/rm", "--reward_funcs", "format", "--reward_weights", "1"},
          "--reward_weights gives 1 weights for 1 --reward_funcs and 1 --reward_model");
  refused({"--reward_model", "a", "b", "--reward_template", "qwen3"}, "--reward_template gives 1 templates for 2 --reward_model");
  refused({"--reward_model", "a", "b", "--reward_adapters", "x"}, "--reward_adapters applies to a single --reward_model");
  refused({"--reward_model", "/a/checkpoint-60", "/b/checkpoint-60"}, "two rewards would be logged as checkpoint-60");
}

// GKD's defaults (ms-swift 4.6's: lmbda 0.5, beta 0.5, temperature 0.9, conversation rows) and what it refuses.
TEST(RlhfOptions, GkdDefaultsAndRefusals) {
  const auto parse = [](std::vector<std::string> args) { return rlhf_of("gkd", std::move(args)); };
  const auto gkd = parse({"--teacher_model", "/models/teacher"});
  EXPECT_TRUE(gkd.distillation());
  EXPECT_DOUBLE_EQ(gkd.gkd.lmbda, 0.5);
  EXPECT_DOUBLE_EQ(gkd.gkd.beta, 0.5);
  EXPECT_DOUBLE_EQ(gkd.gkd.temperature, 0.9);
  EXPECT_EQ(gkd.gkd.max_completion_length, 512);
  EXPECT_EQ(gkd.gkd.teacher_model, "/models/teacher");
  EXPECT_EQ(gkd.training.data.row_kind, templates::TemplateOptions::RowKind::kConversation);
  EXPECT_EQ(gkd.training.data.loss_scale, "last_round");
  EXPECT_DOUBLE_EQ(parse({"--teacher_model", "t", "--beta", "0"}).gkd.beta, 0.0);
  const auto refused = [](std::vector<std::string> args, const std::string& says) { expect_refused("gkd", std::move(args), says); };
  refused({}, "--rlhf_type gkd needs --teacher_model");
  refused({"--teacher_model", "t", "--lmbda", "1.5"}, "--lmbda");
  refused({"--teacher_model", "t", "--seq_kd", "true"}, "--seq_kd (the teacher's own replies) is not implemented");
  refused({"--teacher_model", "t", "--gkd_logits_topk", "20"}, "--gkd_logits_topk is not available yet");
  refused({"--teacher_model", "t", "--ref_model", "r"}, "--ref_model is not used");
}
