// --deepspeed presets and DeepSpeed JSON files, and the parameter partition ZeRO-1/2 shard by.
#include "swift/distributed/zero.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "swift/core/error.h"

namespace swift::distributed {
namespace {

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/swift-ds-XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  std::ofstream(name) << text;
  return name;
}

TEST(DeepSpeedConfig, Presets) {
  EXPECT_EQ(parse_deepspeed("").stage, 0);
  EXPECT_EQ(parse_deepspeed("zero0").stage, 0);
  EXPECT_EQ(parse_deepspeed("zero1").stage, 1);
  const auto z2 = parse_deepspeed("zero2");
  EXPECT_EQ(z2.stage, 2);
  EXPECT_FALSE(z2.offload_optimizer);
  EXPECT_EQ(parse_deepspeed("zero3").stage, 3);
  EXPECT_TRUE(parse_deepspeed("zero3_offload").offload_param);
  const auto z2o = parse_deepspeed("zero2_offload");
  EXPECT_EQ(z2o.stage, 2);
  EXPECT_TRUE(z2o.offload_optimizer);
  EXPECT_FALSE(z2o.offload_param);
}

TEST(DeepSpeedConfig, JsonFile) {
  const auto path = write_temp(R"({"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 1,
      "offload_optimizer": {"device": "cpu", "pin_memory": true}, "reduce_bucket_size": 1000000,
      "overlap_comm": true}})");
  const auto c = parse_deepspeed(path);
  EXPECT_EQ(c.stage, 1);
  EXPECT_TRUE(c.offload_optimizer);
  EXPECT_FALSE(c.offload_param);
  EXPECT_EQ(c.reduce_bucket_bytes, 4000000);
  EXPECT_EQ(c.source, path);
  std::remove(path.c_str());
  const auto autos = write_temp(R"({"zero_optimization": {"stage": "auto", "reduce_bucket_size": "auto"}})");
  EXPECT_EQ(parse_deepspeed(autos).stage, 0);
  EXPECT_EQ(parse_deepspeed(autos).reduce_bucket_bytes, ZeroConfig{}.reduce_bucket_bytes);
  std::remove(autos.c_str());
  const auto none = write_temp(R"({"train_batch_size": 8})");
  EXPECT_EQ(parse_deepspeed(none).stage, 0);
  std::remove(none.c_str());
}

void expect_usage_error(const std::string& spec, const std::string& fragment) {
  try {
    parse_deepspeed(spec);
    ADD_FAILURE() << spec << " was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--deepspeed"), std::string::npos) << e.what();
  }
}

TEST(DeepSpeedConfig, ErrorsNameTheFlagAndTheKey) {
  expect_usage_error("zero9", "neither a preset nor a readable file");
  const auto bad_json = write_temp("{stage: 2");
  expect_usage_error(bad_json, "not valid JSON");
  const auto bad_stage = write_temp(R"({"zero_optimization": {"stage": 7}})");
  expect_usage_error(bad_stage, "stage 7");
  const auto nvme = write_temp(R"({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme"}}})");
  expect_usage_error(nvme, "offload_optimizer.device 'nvme'");
  const auto text_stage = write_temp(R"({"zero_optimization": {"stage": "two"}})");
  expect_usage_error(text_stage, "zero_optimization.stage");
  for (const auto& p : {bad_json, bad_stage, nvme, text_stage}) std::remove(p.c_str());
}

TEST(DeepSpeedConfig, FsdpSpellings) {
  EXPECT_EQ(sharding_spec("zero2", ""), "zero2");
  EXPECT_EQ(sharding_spec("", "full_shard auto_wrap"), "zero3");
  EXPECT_EQ(sharding_spec("", "hybrid_shard"), "zero3");
  EXPECT_EQ(sharding_spec("", "shard_grad_op"), "zero2");
  EXPECT_EQ(sharding_spec("", "no_shard"), "zero0");
  EXPECT_THROW(sharding_spec("zero2", "full_shard"), UsageError);
  EXPECT_THROW(sharding_spec("", "fsdp_config.json"), UsageError);
}

TEST(OptimizerShards, CompleteSetsLoadAndAMissingShardIsRefused) {
  char dir_template[] = "/tmp/swift-shards-XXXXXX";
  const std::filesystem::path dir = mkdtemp(dir_template);
  EXPECT_TRUE(optimizer_state_files(dir).empty());
  EXPECT_EQ(optimizer_shard_name(1, 4), "optimizer-rank00001-of-00004.safetensors");
  for (int r = 0; r < 3; ++r) std::ofstream(dir / optimizer_shard_name(r, 3)) << "x";
  const auto files = optimizer_state_files(dir);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[2].filename(), optimizer_shard_name(2, 3));
  std::filesystem::remove(dir / optimizer_shard_name(1, 3));
  try {
    optimizer_state_files(dir);
    ADD_FAILURE() << "a missing shard was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("not the full set of 3"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "optimizer.safetensors") << "x";  // one process's file wins
  EXPECT_EQ(optimizer_state_files(dir).size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(ParameterPartition, BalancesBytesWithinOneParameterAndIsDeterministic) {
  const std::vector<int64_t> bytes = {400, 100, 100, 100, 100, 50, 50, 300, 20};
  const ParameterPartition a(bytes, 2), b(bytes, 2);
  EXPECT_EQ(a.owners(), b.owners());
  EXPECT_EQ(a.bytes_of(0) + a.bytes_of(1), 1220);
  EXPECT_LE(std::abs(a.bytes_of(0) - a.bytes_of(1)), 400);  // within the largest parameter
  EXPECT_EQ(a.owner(0), 0);  // first of the least loaded
  EXPECT_EQ(a.owner(1), 1);
  const ParameterPartition one(bytes, 1);
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(one.owner(i), 0);
  const ParameterPartition many(bytes, 4);
  int64_t total = 0;
  for (int r = 0; r < 4; ++r) total += many.bytes_of(r);
  EXPECT_EQ(total, 1220);
}

// Largest first: an untied head last in model order does not tip the balance (in model order it would: 6 vs 2).
TEST(ParameterPartition, LargestFirstThenLaterParametersToTheLightest) {
  ParameterPartition p({1, 1, 1, 1, 4}, 2);
  EXPECT_EQ(p.owner(4), 0);
  EXPECT_EQ(p.bytes_of(0), 4);
  EXPECT_EQ(p.bytes_of(1), 4);
  // Parameters made after loading (LoRA's) go, one by one, to the least-loaded rank.
  EXPECT_EQ(p.assign(3), 0);
  EXPECT_EQ(p.assign(1), 1);
  EXPECT_EQ(p.owners().size(), 7u);
  p.charge(1, 10);
  EXPECT_EQ(p.assign(1), 0);
}

}  // namespace
}  // namespace swift::distributed
