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
