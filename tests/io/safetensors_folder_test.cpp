// Weight folders: sharded save/open round trips, huggingface_hub's shard split (checked byte for byte against
// save_torch_state_dict when the project's .venv has it), index consistency errors, and byte-size parsing.
#include "swift/io/safetensors_folder.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "swift/core/error.h"
#include "test_util.h"
#include "skip.h"

namespace fs = std::filesystem;
using swift::DataError;
using swift::UsageError;
using swift::io::NamedTensors;
using swift::io::SafetensorsFile;
using swift::io::SafetensorsFolder;

using swift::test::read_bytes;
using swift::test::reference_python;
using swift::test::TempDir;
using swift::test::write_bytes;

namespace {

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& item : fs::directory_iterator(dir)) names.push_back(item.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct TensorSpec {
  const char* name;
  std::vector<int64_t> shape;
  at::ScalarType dtype;
};

// Byte sizes with a 400-byte limit: 320 | 256 | 256+32+32+32 and a 640-byte tensor over the limit in between,
// which huggingface_hub puts in a shard of its own ahead of the shard still being filled.
const std::vector<TensorSpec> kSpecs = {
    {"model.embed_tokens.weight", {10, 8}, at::kFloat},     // 320
    {"model.layers.0.attn.weight", {8, 8}, at::kFloat},     // 256: overflows shard 1
    {"model.layers.0.mlp.weight", {16, 8}, at::kBFloat16},  // 256: overflows shard 2
    {"model.layers.0.norm.weight", {8}, at::kFloat},        // 32
    {"lm_head.weight", {20, 8}, at::kFloat},                // 640: over the limit, its own shard
    {"model.norm.weight", {8}, at::kFloat},                 // 32
    {"model.layers.1.index", {4}, at::kLong},               // 32
};
constexpr uint64_t kSpecShardBytes = 400;

// arange cast to each dtype: the same values the Python side builds.
NamedTensors spec_tensors() {
  NamedTensors tensors;
  for (const auto& spec : kSpecs) {
    int64_t numel = 1;
    for (int64_t size : spec.shape) numel *= size;
    tensors.emplace_back(spec.name, at::arange(numel, at::kLong).reshape(spec.shape).to(spec.dtype));
  }
  return tensors;
}

class SafetensorsFolderTest : public ::testing::Test {
 protected:
  fs::path dir(const std::string& name) const { return tmp_.path() / name; }

  // Saves the spec tensors sharded, then returns the folder.
  fs::path sharded_model() const {
    const fs::path model = dir("sharded");
    swift::io::save_safetensors_folder(model, spec_tensors(), kSpecShardBytes);
    return model;
  }

  // Runs `open` and checks the DataError names every string in `expected`.
  static void expect_open_fails(const fs::path& model, const std::vector<std::string>& expected) {
    try {
      SafetensorsFolder::open(model);
      FAIL() << "opened an inconsistent folder";
    } catch (const DataError& e) {
      for (const auto& part : expected) EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
      EXPECT_FALSE(e.hint().empty());
    }
  }

  TempDir tmp_;
};

TEST_F(SafetensorsFolderTest, SmallModelIsOneFileWithoutIndex) {
  const NamedTensors tensors = spec_tensors();
  swift::io::save_safetensors_folder(dir("single"), tensors);
  EXPECT_EQ(file_names(dir("single")), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(SafetensorsFile::open(dir("single") / "model.safetensors")->metadata().at("format"), "pt");

  const auto folder = SafetensorsFolder::open(dir("single"));
  for (const auto& [name, expected] : tensors) EXPECT_TRUE(at::equal(folder.get(name), expected)) << name;
  EXPECT_EQ(folder.file_of("lm_head.weight"), dir("single") / "model.safetensors");
}

TEST_F(SafetensorsFolderTest, ShardedRoundTripFollowsHuggingFaceSplit) {
  const fs::path model = sharded_model();
  EXPECT_EQ(file_names(model),
            (std::vector<std::string>{"model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                                      "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors",
                                      "model.safetensors.index.json"}));

  const auto index = nlohmann::json::parse(read_bytes(model / "model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), 320u + 256 + 256 + 32 + 640 + 32 + 32);
  const nlohmann::json expected_map = {
      {"model.embed_tokens.weight", "model-00001-of-00004.safetensors"},
      {"model.layers.0.attn.weight", "model-00002-of-00004.safetensors"},
      {"lm_head.weight", "model-00003-of-00004.safetensors"},
      {"model.layers.0.mlp.weight", "model-00004-of-00004.safetensors"},
      {"model.layers.0.norm.weight", "model-00004-of-00004.safetensors"},
      {"model.norm.weight", "model-00004-of-00004.safetensors"},
      {"model.layers.1.index", "model-00004-of-00004.safetensors"},
  };
  EXPECT_EQ(index["weight_map"], expected_map);
  EXPECT_EQ(SafetensorsFile::open(model / "model-00002-of-00004.safetensors")->metadata(),
            (std::map<std::string, std::string>{{"format", "pt"}}));

  const auto folder = SafetensorsFolder::open(model);
  std::vector<std::string> names;
  for (const auto& [name, expected] : spec_tensors()) {
    names.push_back(name);
    EXPECT_TRUE(at::equal(folder.get(name), expected)) << name;
  }
  EXPECT_EQ(folder.entry("model.layers.1.index").dtype, "I64");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(folder.names(), names);
  EXPECT_EQ(folder.file_of("lm_head.weight").filename(), "model-00003-of-00004.safetensors");
  EXPECT_TRUE(SafetensorsFolder::has_weights(model));
  EXPECT_FALSE(SafetensorsFolder::has_weights(dir("nothing")));
}

TEST_F(SafetensorsFolderTest, ResavingRemovesTheOldSplit) {
  const fs::path model = sharded_model();
  fs::create_directories(model);
  write_bytes(model / "config.json", "{}");
  swift::io::save_safetensors_folder(model, {{"only", at::ones({2})}});
  EXPECT_EQ(file_names(model), (std::vector<std::string>{"config.json", "model.safetensors"}));
  EXPECT_EQ(SafetensorsFolder::open(model).names(), std::vector<std::string>{"only"});
}

TEST_F(SafetensorsFolderTest, FolderWithoutIndexReadsEverySafetensorsFile) {
  fs::create_directories(dir("loose"));
  swift::io::save_safetensors(dir("loose") / "adapter.safetensors", {{"a", at::ones({2})}});
  swift::io::save_safetensors(dir("loose") / "extra.safetensors", {{"b", at::zeros({3})}});
  const auto folder = SafetensorsFolder::open(dir("loose"));
  EXPECT_EQ(folder.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(folder.file_of("b").filename(), "extra.safetensors");

  swift::io::save_safetensors(dir("loose") / "twice.safetensors", {{"a", at::ones({2})}});
  expect_open_fails(dir("loose"), {"'a'", "adapter.safetensors", "twice.safetensors"});
}

TEST_F(SafetensorsFolderTest, MissingTensorNamesTheFolder) {
  const auto folder = SafetensorsFolder::open(sharded_model());
  try {
    folder.get("model.layers.9.attn.weight");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(e.message().find("'model.layers.9.attn.weight'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("sharded"), std::string::npos) << e.message();
  }
}

TEST_F(SafetensorsFolderTest, EmptyFolderIsADataError) {
  fs::create_directories(dir("empty"));
  expect_open_fails(dir("empty"), {"empty", "no safetensors weights"});
}

TEST_F(SafetensorsFolderTest, MissingShardIsADataError) {
  const fs::path model = sharded_model();
  fs::remove(model / "model-00003-of-00004.safetensors");
  expect_open_fails(model, {"model-00003-of-00004.safetensors", "'lm_head.weight'", "missing"});
}

TEST_F(SafetensorsFolderTest, TensorListedButAbsentFromShardIsADataError) {
  const fs::path model = sharded_model();
  auto index = nlohmann::ordered_json::parse(read_bytes(model / "model.safetensors.index.json"));
  index["weight_map"]["model.layers.0.norm.weight"] = "model-00001-of-00004.safetensors";
  write_bytes(model / "model.safetensors.index.json", index.dump(2));
  expect_open_fails(model, {"'model.layers.0.norm.weight'", "model-00001-of-00004.safetensors"});
}

TEST_F(SafetensorsFolderTest, ShardHoldingAnUnlistedTensorIsADataError) {
  const fs::path model = sharded_model();
  auto index = nlohmann::ordered_json::parse(read_bytes(model / "model.safetensors.index.json"));
  index["weight_map"].erase("model.norm.weight");
  write_bytes(model / "model.safetensors.index.json", index.dump(2));
  expect_open_fails(model, {"'model.norm.weight'", "model-00004-of-00004.safetensors", "does not list"});
}

TEST_F(SafetensorsFolderTest, BrokenIndexIsADataError) {
  const fs::path model = sharded_model();
  const fs::path index = model / "model.safetensors.index.json";
  write_bytes(index, "{\"weight_map\": {");
  expect_open_fails(model, {"model.safetensors.index.json", "not valid JSON"});
  write_bytes(index, R"({"metadata": {}})");
  expect_open_fails(model, {"model.safetensors.index.json", "weight_map"});
  write_bytes(index, R"({"weight_map": {"w": 3}})");
  expect_open_fails(model, {"model.safetensors.index.json", "'w'"});
  write_bytes(index, R"({"weight_map": {"w": "../outside.safetensors"}})");
  expect_open_fails(model, {"model.safetensors.index.json", "'w'", "../outside.safetensors"});
}

TEST_F(SafetensorsFolderTest, CorruptShardErrorSaysWhichShard) {
  const fs::path model = sharded_model();
  write_bytes(model / "model-00002-of-00004.safetensors", "garbage");
  expect_open_fails(model, {"shard 2/4", "model-00002-of-00004.safetensors"});
}

TEST(ParseByteSize, AcceptsHuggingFaceAndBinaryUnits) {
  using swift::io::parse_byte_size;
  EXPECT_EQ(parse_byte_size("5GB"), 5'000'000'000ULL);
  EXPECT_EQ(parse_byte_size("500MB"), 500'000'000ULL);
  EXPECT_EQ(parse_byte_size("100KB"), 100'000ULL);
  EXPECT_EQ(parse_byte_size("2TB"), 2'000'000'000'000ULL);
  EXPECT_EQ(parse_byte_size("1.5GiB"), 1'610'612'736ULL);
  EXPECT_EQ(parse_byte_size("3MiB"), 3ULL << 20);
  EXPECT_EQ(parse_byte_size("1.5GB"), 1'500'000'000ULL);
  EXPECT_EQ(parse_byte_size(" 10gb "), 10'000'000'000ULL);
  EXPECT_EQ(parse_byte_size("123456"), 123'456ULL);
  EXPECT_EQ(parse_byte_size("64B"), 64ULL);
  EXPECT_EQ(parse_byte_size("18446744073709551615"), 18'446'744'073'709'551'615ULL);  // exact, no rounding
}

TEST(ParseByteSize, RejectsNonsenseNamingTheFlag) {
  for (const char* text : {"", "GB", "-5GB", "5XB", "five", "1e9", "5 G B", "18446744073709551616", "20000000TB"}) {
    try {
      swift::io::parse_byte_size(text, "--max_shard_size");
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(e.message().find("--max_shard_size"), std::string::npos) << e.message();
      EXPECT_FALSE(e.hint().empty());
    }
  }
}

// ---- Parity with huggingface_hub.save_torch_state_dict (skipped when the project's .venv lacks it). ----


TEST_F(SafetensorsFolderTest, MatchesHuggingFaceHubByteForByte) {
  const std::string python = reference_python();
  if (std::system((python + " -c 'import huggingface_hub, safetensors.torch' >/dev/null 2>&1").c_str()) != 0)
    SWIFT_REFERENCE_MISSING(python << " cannot import huggingface_hub and safetensors; run scripts/setup.sh --tests");

  std::string specs;  // name:dtype:d0xd1 per tensor, in state-dict order
  for (const auto& spec : kSpecs) {
    std::string shape;
    for (int64_t size : spec.shape) shape.append(shape.empty() ? "" : "x").append(std::to_string(size));
    specs.append(specs.empty() ? "" : ",").append(spec.name).append(":").append(c10::toString(spec.dtype));
    specs.append(":").append(shape);
  }
  write_bytes(dir("save.py"), R"(import math, os, sys, torch
from huggingface_hub import save_torch_state_dict
out, max_bytes, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
os.makedirs(out, exist_ok=True)
dtypes = {"Float": torch.float32, "BFloat16": torch.bfloat16, "Long": torch.int64}
state = {}
for spec in specs:
    name, dtype, shape = spec.split(":")
    shape = [int(s) for s in shape.split("x")]
    state[name] = torch.arange(math.prod(shape)).reshape(shape).to(dtypes[dtype])
save_torch_state_dict(state, out, max_shard_size=max_bytes)
)");
  const std::string command = python + " " + dir("save.py").string() + " " + dir("theirs").string() + " " +
                              std::to_string(kSpecShardBytes) + " " + specs;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  const fs::path ours = sharded_model();
  ASSERT_EQ(file_names(ours), file_names(dir("theirs")));
  for (const auto& name : file_names(ours))
    EXPECT_EQ(read_bytes(ours / name), read_bytes(dir("theirs") / name)) << name << " differs";
}

}  // namespace
