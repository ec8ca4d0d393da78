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
#include "swift/io/model_parallel_files.h"
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

// A model-parallel checkpoint's parts (model_parallel_files.h) of a [4, 6] weight split by rows over 2 TP ranks, a
// [6, 4] one by columns, and a norm whole in TP rank 0's file; stage 1 holds the head whole.
class ModelPartsTest : public SafetensorsFolderTest {
 protected:
  fs::path parts() const {
    const fs::path d = dir("parts");
    fs::create_directories(d);
    using swift::io::TensorPart;
    for (int r = 0; r < 2; ++r) {
      NamedTensors t = {{"q.weight", q_.narrow(0, 2 * r, 2).contiguous()}, {"o.weight", o_.narrow(1, 2 * r, 2).contiguous()}};
      if (r == 0) t.emplace_back("norm.weight", norm_);
      swift::io::save_model_part(d / swift::io::model_part_file_name(r, 0), t,
                                 {{"q.weight", TensorPart{0, 2 * r, 4}}, {"o.weight", TensorPart{1, 2 * r, 4}}});
      swift::io::save_model_part(d / swift::io::model_part_file_name(r, 1), r == 0 ? NamedTensors{{"head.weight", head_}} : NamedTensors{}, {});
    }
    swift::io::write_model_parallel_index(d, 2, 2);
    return d;
  }
  // Rewrites TP rank 1's stage-0 file with its q part placed at `start`.
  void move_part(const fs::path& d, int64_t start, at::ScalarType dtype = at::kFloat) const {
    swift::io::save_model_part(d / "mp_rank_01_000.safetensors", {{"q.weight", q_.narrow(0, 2, 2).to(dtype)}, {"o.weight", o_.narrow(1, 2, 2).contiguous()}},
                               {{"q.weight", {0, start, 4}}, {"o.weight", {1, 2, 4}}});
  }
  at::Tensor q_ = at::arange(24, at::kFloat).reshape({4, 6}), o_ = at::arange(24, at::kFloat).reshape({6, 4}) * 2,
             norm_ = at::ones({6}), head_ = at::arange(12, at::kFloat).reshape({2, 6});
};

TEST_F(ModelPartsTest, ReadsTheWholeTensorsPutTogether) {
  const auto folder = SafetensorsFolder::open(parts());
  EXPECT_EQ(folder.names(), (std::vector<std::string>{"head.weight", "norm.weight", "o.weight", "q.weight"}));
  EXPECT_TRUE(at::equal(folder.get("q.weight"), q_));
  EXPECT_TRUE(at::equal(folder.get("o.weight"), o_));
  EXPECT_TRUE(at::equal(folder.get("norm.weight"), norm_));
  EXPECT_TRUE(at::equal(folder.get("head.weight"), head_));
  EXPECT_EQ(folder.entry("o.weight").shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(folder.file_of("q.weight").filename(), "mp_rank_00_000.safetensors");
  EXPECT_TRUE(SafetensorsFolder::has_weights(dir("parts")));
}

// A slice (a tensor-parallel rank of another layout reading its part) comes from the parts it overlaps: within one
// part, across two, along the other dimension; and from a plain tensor as a view.
TEST_F(ModelPartsTest, SlicesComeFromThePartsTheyOverlap) {
  const auto folder = SafetensorsFolder::open(parts());
  EXPECT_TRUE(at::equal(folder.get_slice("q.weight", 0, 0, 2), q_.narrow(0, 0, 2)));
  EXPECT_TRUE(at::equal(folder.get_slice("q.weight", 0, 1, 2), q_.narrow(0, 1, 2)));
  EXPECT_TRUE(at::equal(folder.get_slice("q.weight", 0, 3, 1), q_.narrow(0, 3, 1)));
  EXPECT_TRUE(at::equal(folder.get_slice("q.weight", 1, 2, 3), q_.narrow(1, 2, 3)));
  EXPECT_TRUE(at::equal(folder.get_slice("o.weight", 1, 1, 3), o_.narrow(1, 1, 3)));
  EXPECT_TRUE(at::equal(folder.get_slice("o.weight", 0, 4, 2), o_.narrow(0, 4, 2)));
  EXPECT_TRUE(at::equal(folder.get_slice("head.weight", 1, 3, 3), head_.narrow(1, 3, 3)));
}

TEST_F(ModelPartsTest, MissingOrMisplacedPartsAreDataErrors) {
  const fs::path d = parts();
  move_part(d, 0);  // both parts at rows [0, 2): rows [2, 4) nowhere
  expect_open_fails(d, {"'q.weight'", "two part files"});
  move_part(d, 3);
  expect_open_fails(d, {"mp_rank_01_000.safetensors", "'q.weight'", "outside its whole tensor"});
  swift::io::save_model_part(d / "mp_rank_01_000.safetensors", {{"o.weight", o_.narrow(1, 2, 2).contiguous()}},
                             {{"o.weight", {1, 2, 4}}});
  expect_open_fails(d, {"'q.weight'", "[2, 4) is in no part file"});
  move_part(d, 2, at::kBFloat16);
  expect_open_fails(d, {"mp_rank_01_000.safetensors", "'q.weight'", "does not fit"});
  move_part(d, 2);
  EXPECT_TRUE(at::equal(SafetensorsFolder::open(d).get("q.weight"), q_));
  fs::remove(d / "mp_rank_01_001.safetensors");
  expect_open_fails(d, {"model_parallel.json", "mp_rank_01_001.safetensors", "missing"});
}

TEST_F(ModelPartsTest, BrokenIndexOrSplitsAreDataErrors) {
  const fs::path d = parts();
  write_bytes(d / "model_parallel.json", R"({"format": "swift-model-parallel", "files": ["../x.safetensors"]})");
  expect_open_fails(d, {"model_parallel.json", "../x.safetensors"});
  write_bytes(d / "model_parallel.json", R"({"files": ["mp_rank_00_000.safetensors"]})");
  expect_open_fails(d, {"model_parallel.json", "not a swift model-parallel index"});
  swift::io::write_model_parallel_index(d, 2, 2);
  swift::io::save_safetensors(d / "mp_rank_00_001.safetensors", {{"head.weight", head_}}, {{"swift_splits", R"({"head.weight": [2, 0, 9]})"}});
  expect_open_fails(d, {"mp_rank_00_001.safetensors", "'head.weight'", "outside its whole tensor"});
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
