// generation_config.json and JSON file errors.
#include <gtest/gtest.h>

#include <fstream>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "test_util.h"

using namespace swift;

TEST(HfConfig, GenerationConfigIntOrListEos) {
  auto g = io::parse_generation_config(
      nlohmann::json::parse(R"({"bos_token_id": 1, "eos_token_id": [2, 7], "pad_token_id": 0, "do_sample": true,
                              "temperature": 0.6, "top_p": 0.9, "top_k": 20, "repetition_penalty": 1.05,
                              "max_new_tokens": 128})"),
      "g.json");
  EXPECT_EQ(g.bos_token_id, 1);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(g.pad_token_id, 0);
  EXPECT_EQ(g.do_sample, true);
  EXPECT_DOUBLE_EQ(*g.temperature, 0.6);
  EXPECT_DOUBLE_EQ(*g.top_p, 0.9);
  EXPECT_EQ(g.top_k, 20);
  EXPECT_DOUBLE_EQ(*g.repetition_penalty, 1.05);
  EXPECT_EQ(g.max_new_tokens, 128);
  EXPECT_FALSE(g.min_p.has_value());
  auto single = io::parse_generation_config(nlohmann::json::parse(R"({"eos_token_id": 5})"), "g.json");
  EXPECT_EQ(single.eos_token_ids, (std::vector<int64_t>{5}));
  EXPECT_THROW(io::parse_generation_config(nlohmann::json::parse(R"({"eos_token_id": "x"})"), "g.json"), DataError);
  EXPECT_THROW(io::parse_generation_config(nlohmann::json::parse(R"({"temperature": "hot"})"), "g.json"), DataError);
}

TEST(HfConfig, BadJsonNamesTheFile) {
  test::TempDir tmp;
  std::ofstream(tmp / "config.json") << "{\"model_type\": ";
  try {
    io::read_json_file(tmp / "config.json");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos);
  }
  EXPECT_THROW(io::read_json_file(tmp / "absent.json"), DataError);
  std::ofstream(tmp / "huge.json") << R"({"rope_theta": 1e999})";  // beyond a double: a DataError, not a crash
  EXPECT_THROW(io::read_json_file(tmp / "huge.json"), DataError);
  EXPECT_TRUE(io::load_generation_config(tmp.path()).eos_token_ids.empty());
}
