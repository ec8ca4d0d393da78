// Flag parsing: ms-swift spellings, config files, errors naming the flag and the closest valid one, and every
// flag of every command parses with its declared default.
#include <gtest/gtest.h>

#include <fstream>

#include "swift/cli/flags.h"
#include "swift/core/error.h"
#include "swift/recipes/commands.h"
#include "swift/serve/engine_flags.h"
#include "test_util.h"

using namespace swift;
using cli::FlagType;

namespace {
std::vector<cli::FlagSpec> specs() {
  return {{"model", FlagType::kString, "", "m"},       {"max_new_tokens", FlagType::kInt, "64", "n"},
          {"temperature", FlagType::kFloat, "0.7", "t"}, {"stream", FlagType::kBool, "false", "s"},
          {"dataset", FlagType::kList, "", "d"}};
}
}  // namespace

TEST(Flags, DefaultsAndSpellings) {
  auto f = cli::parse_flags("infer", specs(), {"--model", "m1", "--max-new-tokens=8", "--stream", "--dataset", "a.jsonl", "b.jsonl#100"});
  EXPECT_EQ(f.str("model"), "m1");
  EXPECT_EQ(f.integer("max_new_tokens"), 8);
  EXPECT_DOUBLE_EQ(f.number("temperature"), 0.7);
  EXPECT_TRUE(f.boolean("stream"));
  EXPECT_EQ(f.list("dataset"), (std::vector<std::string>{"a.jsonl", "b.jsonl#100"}));
  EXPECT_TRUE(f.given("model"));
  EXPECT_FALSE(f.given("temperature"));
  auto g = cli::parse_flags("infer", specs(), {"--stream", "false"});
  EXPECT_FALSE(g.boolean("stream"));
}

TEST(Flags, UnknownFlagNamesClosest) {
  try {
    cli::parse_flags("infer", specs(), {"--max_new_token", "3"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--max_new_token"), std::string::npos);
    EXPECT_NE(e.hint().find("--max_new_tokens"), std::string::npos);
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

TEST(Flags, BadValuesNameTheFlag) {
  auto f = cli::parse_flags("infer", specs(), {"--max_new_tokens", "lots", "--temperature", "hot", "--stream", "maybe"});
  EXPECT_THROW(f.integer("max_new_tokens"), UsageError);
  EXPECT_THROW(f.number("temperature"), UsageError);
  EXPECT_THROW(f.boolean("stream"), UsageError);
  EXPECT_THROW(cli::parse_flags("infer", specs(), {"--model"}), UsageError);
  EXPECT_THROW(cli::parse_flags("infer", specs(), {"stray"}), UsageError);
}

TEST(Flags, ConfigFileExpandsAndCommandLineWins) {
  test::TempDir tmp;
  {
    std::ofstream(tmp / "run.yaml") << "model: from_yaml\nmax_new_tokens: 5\ndataset: [x.jsonl, y.jsonl]\nstream: true\n";
    std::ofstream(tmp / "run.json") << R"({"model": "from_json", "temperature": 0.1})";
    std::ofstream(tmp / "bad.yaml") << "modle: typo\n";
  }
  auto f = cli::parse_flags("infer", specs(), {(tmp / "run.yaml").string(), "--max_new_tokens", "9"});
  EXPECT_EQ(f.str("model"), "from_yaml");
  EXPECT_EQ(f.integer("max_new_tokens"), 9);
  EXPECT_EQ(f.list("dataset"), (std::vector<std::string>{"x.jsonl", "y.jsonl"}));
  EXPECT_TRUE(f.boolean("stream"));
  auto j = cli::parse_flags("infer", specs(), {(tmp / "run.json").string()});
  EXPECT_EQ(j.str("model"), "from_json");
  EXPECT_DOUBLE_EQ(j.number("temperature"), 0.1);
  try {
    cli::parse_flags("infer", specs(), {(tmp / "bad.yaml").string()});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml"), std::string::npos);
    EXPECT_NE(e.hint().find("--model"), std::string::npos);
  }
  EXPECT_THROW(cli::parse_flags("infer", specs(), {(tmp / "missing.yaml").string()}), UsageError);
}

// Found by fuzzing: a YAML key that is a list or a mapping (complex keys) escaped as yaml-cpp's bad conversion.
TEST(Flags, ConfigFileKeysMustBeFlagNames) {
  test::TempDir tmp;
  std::ofstream(tmp / "list_key.yaml") << "? - model\n  - stream\n: x\n";
  std::ofstream(tmp / "map_key.yaml") << "? {model: m}\n: x\n";
  for (const char* file : {"list_key.yaml", "map_key.yaml"}) {
    try {
      cli::parse_flags("infer", specs(), {(tmp / file).string()});
      ADD_FAILURE() << file;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("not a flag name"), std::string::npos) << e.what();
    }
  }
}

// Found by fuzz_flags: a config file name the system refuses (longer than NAME_MAX) threw filesystem_error, exit 1.
TEST(Flags, AConfigFileNameTooLongIsAUsageError) {
  const std::string name = std::string(300, 'a') + ".yaml";
  try {
    cli::parse_flags("infer", specs(), {name});
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be read"), std::string::npos) << e.what();
  }
}

TEST(Flags, EveryCommandsFlagsParseWithDefaults) {
  for (const auto& command : recipes::commands()) {
    SCOPED_TRACE(command.name);
    const auto table = command.flags();
    auto f = cli::parse_flags(command.name, table, {});
    for (const auto& spec : table) {
      if (spec.default_value.empty()) continue;
      switch (spec.type) {
        case FlagType::kInt: EXPECT_NO_THROW(f.integer(spec.name)) << spec.name; break;
        case FlagType::kFloat: EXPECT_NO_THROW(f.number(spec.name)) << spec.name; break;
        case FlagType::kBool: EXPECT_NO_THROW(f.boolean(spec.name)) << spec.name; break;
        default: EXPECT_NO_THROW(f.str(spec.name)) << spec.name;
      }
    }
    // Help lists every flag with its default.
    const std::string help = cli::format_help(command.name, command.summary, table);
    for (const auto& spec : table) EXPECT_NE(help.find("--" + spec.name + " "), std::string::npos) << spec.name;
  }
}

// Older ms-swift spellings that pasted command lines still carry (issue 18's command lines) reach the flag they mean.
TEST(Flags, OldMsSwiftSpellingsAreAliases) {
  auto f = cli::parse_flags("sft", recipes::sft_flags(), {"--lora_target_modules", "all-linear", "q_proj", "--pack_max_length",
                                                  "8192", "--sft_type", "full"});
  EXPECT_EQ(f.list("target_modules"), (std::vector<std::string>{"all-linear", "q_proj"}));
  EXPECT_EQ(f.integer("packing_length"), 8192);
  EXPECT_EQ(f.str("train_type"), "full");
}

// Megatron's spellings of the same flags; two spellings of one flag must agree (which was meant is unknown).
TEST(Flags, MegatronSpellingsAreAliasesThatMustAgree) {
  auto f = cli::parse_flags("sft", recipes::sft_flags(), {"--lr", "2e-5", "--train_iters", "7", "--save", "out", "--learning_rate", "2e-5"});
  EXPECT_DOUBLE_EQ(f.number("learning_rate"), 2e-5);
  EXPECT_EQ(f.integer("max_steps"), 7);
  EXPECT_EQ(f.str("output_dir"), "out");
  try {
    cli::parse_flags("sft", recipes::sft_flags(), {"--output_dir", "a", "--save", "b"});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--output_dir and --save are the same flag"), std::string::npos) << e.what();
  }
  // The same spelling twice: the last one counts, as before.
  EXPECT_EQ(cli::parse_flags("sft", recipes::sft_flags(), {"--save", "a", "--save", "b"}).str("output_dir"), "b");
}

TEST(Flags, ClosestMatch) {
  EXPECT_EQ(cli::closest_match("exprot", {"export", "infer", "sft"}), "export");
  EXPECT_EQ(cli::closest_match("zzzzzzzz", {"export", "infer", "sft"}), "");
}

// The seeds' deploy line (vLLM's flags) and older ms-swift spellings: limits land on swift's own flags, the rest
// are explained, an unknown backend is refused.
TEST(Flags, EngineFlagsOfOtherBackends) {
  auto f = cli::parse_flags("deploy", recipes::deploy_flags(),
                            {"--infer_backend", "vllm", "--vllm_tensor_parallel_size", "4", "--vllm_pipeline_parallel_size",
                             "2", "--vllm_max_model_len", "8192", "--vllm_max_num_seqs", "64",
                             "--gpu_memory_utilization", "0.9", "--use_flash_attention", "true"});
  EXPECT_EQ(f.integer("max_model_len"), 8192);
  EXPECT_EQ(f.integer("max_batch_size"), 64);
  EXPECT_TRUE(f.boolean("use_flash_attn"));
  const auto notes = serve::engine_notes(f);
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_NE(notes[0].find("--infer_backend vllm: served by swift's built-in LibTorch engine"), std::string::npos);
  EXPECT_NE(notes[1].find("--vllm_tensor_parallel_size 4, --vllm_pipeline_parallel_size 2"), std::string::npos);
  EXPECT_NE(notes[2].find("--vllm_gpu_memory_utilization has no effect"), std::string::npos);
  for (const char* quiet : {"transformers", "pt"})
    EXPECT_TRUE(serve::engine_notes(cli::parse_flags("infer", recipes::infer_flags(), {"--infer_backend", quiet})).empty());
  EXPECT_THROW(serve::engine_notes(cli::parse_flags("infer", recipes::infer_flags(), {"--infer_backend", "tgi"})),
               UsageError);
}
