// safetensors reader and writer: bit-exact round trips for every dtype, aliasing of the mapping, rejection of
// corrupt headers, and byte-identical output against the reference Python library (safetensors.torch).
#include "swift/io/safetensors.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "swift/core/error.h"
#include "test_util.h"
#include "skip.h"

namespace fs = std::filesystem;
using swift::DataError;
using swift::UsageError;
using swift::io::NamedTensors;
using swift::io::SafetensorsFile;

using swift::test::read_bytes;
using swift::test::reference_python;
using swift::test::TempDir;
using swift::test::write_bytes;

namespace {

std::string le_u64(uint64_t value) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  return bytes;
}

// A file from a header text and `data_bytes` bytes of data (0x01 each).
std::string raw_file(const std::string& header, size_t data_bytes) {
  return le_u64(header.size()) + header + std::string(data_bytes, '\x01');
}

// The tensor's bits as a flat byte tensor, so comparisons are bit-exact (NaN payloads included) for every dtype.
at::Tensor bits(const at::Tensor& t) { return t.contiguous().reshape({-1}).view(at::kByte); }

// Random bits of any dtype. Bools stay 0/1: other byte values are not valid bools.
at::Tensor random_tensor(at::ScalarType type, std::vector<int64_t> shape) {
  int64_t numel = 1;
  for (int64_t size : shape) numel *= size;
  if (type == at::kBool) return at::randint(0, 2, shape, at::kByte).to(at::kBool);
  const int64_t bytes = numel * int64_t(c10::elementSize(type));
  return at::randint(0, 256, {bytes}, at::kByte).view(type).reshape(shape);
}

struct DtypeCase {
  const char* name;
  at::ScalarType type;
};
const DtypeCase kEveryDtype[] = {
    {"F64", at::kDouble},
    {"F32", at::kFloat},
    {"F16", at::kHalf},
    {"BF16", at::kBFloat16},
    {"I64", at::kLong},
    {"I32", at::kInt},
    {"I16", at::kShort},
    {"I8", at::kChar},
    {"U8", at::kByte},
    {"BOOL", at::kBool},
    {"F8_E4M3", c10::ScalarType::Float8_e4m3fn},
    {"F8_E5M2", c10::ScalarType::Float8_e5m2},
    {"F8_E4M3FNUZ", c10::ScalarType::Float8_e4m3fnuz},
    {"F8_E5M2FNUZ", c10::ScalarType::Float8_e5m2fnuz},
    {"F8_E8M0", c10::ScalarType::Float8_e8m0fnu},
    {"C64", c10::ScalarType::ComplexFloat},
    {"U16", c10::ScalarType::UInt16},
    {"U32", c10::ScalarType::UInt32},
    {"U64", c10::ScalarType::UInt64},
};

// The reference implementation for parity tests: the project's .venv python with safetensors installed.

bool python_has(const std::string& python, const std::string& module) {
  return std::system((python + " -c 'import " + module + "' >/dev/null 2>&1").c_str()) == 0;
}

int run_python(const std::string& python, const fs::path& script, const std::string& args) {
  return std::system((python + " " + script.string() + " " + args).c_str());
}

class SafetensorsTest : public ::testing::Test {
 protected:
  fs::path file(const std::string& name) const { return dir_.path() / name; }
  TempDir dir_;
};

TEST_F(SafetensorsTest, RoundTripsEveryDtypeBitExact) {
  NamedTensors tensors;
  for (const auto& dtype : kEveryDtype)
    tensors.emplace_back(std::string("t_") + dtype.name, random_tensor(dtype.type, {3, 5}));
  tensors.emplace_back("scalar", random_tensor(at::kFloat, {}));
  tensors.emplace_back("empty", random_tensor(at::kHalf, {0, 4}));
  swift::io::save_safetensors(file("all.safetensors"), tensors);

  const auto loaded = SafetensorsFile::open(file("all.safetensors"));
  ASSERT_EQ(loaded->entries().size(), tensors.size());
  for (const auto& [name, expected] : tensors) {
    SCOPED_TRACE(name);
    const at::Tensor got = loaded->get(name);
    EXPECT_EQ(got.scalar_type(), expected.scalar_type());
    EXPECT_EQ(got.sizes(), expected.sizes());
    EXPECT_TRUE(at::equal(bits(got), bits(expected)));
  }
  for (const auto& dtype : kEveryDtype) EXPECT_EQ(loaded->entry(std::string("t_") + dtype.name).dtype, dtype.name);
}

TEST_F(SafetensorsTest, DtypeNamesMapBothWays) {
  for (const auto& dtype : kEveryDtype) {
    EXPECT_EQ(swift::io::safetensors_dtype_to_scalar(dtype.name), dtype.type) << dtype.name;
    EXPECT_EQ(swift::io::scalar_to_safetensors_dtype(dtype.type), dtype.name);
  }
  bool known = true;
  EXPECT_EQ(swift::io::safetensors_dtype_to_scalar("F4", &known), c10::ScalarType::Undefined);
  EXPECT_FALSE(known);
  EXPECT_THROW(swift::io::safetensors_dtype_to_scalar("Q7"), DataError);
  EXPECT_THROW(swift::io::scalar_to_safetensors_dtype(at::kComplexDouble), UsageError);
}

// Expected bytes worked out from the reference writer's rules (safetensors/src/tensor.rs `prepare`): F32
// before I8 (alignment descending), then names; __metadata__ first; compact JSON padded with spaces to 8.
TEST_F(SafetensorsTest, WriterLayoutFollowsTheReferenceRules) {
  const NamedTensors tensors = {
      {"b", at::tensor({1.0f})}, {"a", at::tensor({int8_t(7), int8_t(8)})}, {"c", at::empty({0}, at::kFloat)}};
  const std::string bytes = swift::io::serialize_safetensors(tensors, {{"format", "pt"}});
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("c":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"a":{"dtype":"I8","shape":[2],"data_offsets":[4,6]}})";
  const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  const std::string data = std::string("\x00\x00\x80\x3f", 4) + "\x07\x08";
  EXPECT_EQ(bytes, le_u64(padded.size()) + padded + data);
}

TEST_F(SafetensorsTest, MetadataRoundTripsAndEmptyMetadataWritesNoKey) {
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "üñí \"quoted\""}};
  swift::io::save_safetensors(file("m.safetensors"), {{"w", at::ones({2})}}, metadata);
  EXPECT_EQ(SafetensorsFile::open(file("m.safetensors"))->metadata(), metadata);

  swift::io::save_safetensors(file("plain.safetensors"), {{"w", at::ones({2})}});
  EXPECT_TRUE(SafetensorsFile::open(file("plain.safetensors"))->metadata().empty());
  EXPECT_EQ(read_bytes(file("plain.safetensors")).find("__metadata__"), std::string::npos);
}

TEST_F(SafetensorsTest, EntriesKeepHeaderOrder) {
  write_bytes(file("order.safetensors"), raw_file(R"({"z":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},)"
                                                  R"("a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                                                  2));
  const auto loaded = SafetensorsFile::open(file("order.safetensors"));
  ASSERT_EQ(loaded->entries().size(), 2u);
  EXPECT_EQ(loaded->entries()[0].name, "z");
  EXPECT_EQ(loaded->entries()[1].name, "a");
  EXPECT_EQ(loaded->entry("z").begin, 1u);
}

TEST_F(SafetensorsTest, AlignedTensorsAliasTheMapping) {
  swift::io::save_safetensors(file("w.safetensors"), {{"big", at::randn({64, 64})},
                                                      {"half", at::randn({7}).to(at::kHalf)},
                                                      {"bytes", at::randint(0, 255, {5}, at::kByte)}});
  const auto loaded = SafetensorsFile::open(file("w.safetensors"));
  const auto* begin = loaded->buffer_data();
  const auto* end = begin + loaded->buffer_size();
  for (const char* name : {"big", "half", "bytes"}) {
    const auto* ptr = static_cast<const uint8_t*>(loaded->get(name).data_ptr());
    EXPECT_TRUE(ptr >= begin && ptr < end) << name << " was copied instead of aliasing the mapping";
  }
  EXPECT_EQ(loaded->get("big").data_ptr(), loaded->get("big").data_ptr());
}

// A header whose length is not a multiple of 8 is legal; the F32 data then sits at an odd address.
TEST_F(SafetensorsTest, MisalignedTensorIsCopiedWithTheSameValues) {
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  if (header.size() % 4 == 0) header += " ";
  float values[2] = {1.5f, -2.25f};
  write_bytes(file("odd.safetensors"),
              le_u64(header.size()) + header + std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  const auto loaded = SafetensorsFile::open(file("odd.safetensors"));
  ASSERT_NE(reinterpret_cast<uintptr_t>(loaded->buffer_data()) % 4, 0u);
  const at::Tensor got = loaded->get("w");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(got.data_ptr()) % 4, 0u);
  EXPECT_TRUE(at::equal(got, at::tensor({1.5f, -2.25f})));
}

TEST_F(SafetensorsTest, InPlaceEditDoesNotReachTheFile) {
  const at::Tensor original = at::arange(16, at::kFloat);
  swift::io::save_safetensors(file("w.safetensors"), {{"w", original}});
  const std::string bytes_before = read_bytes(file("w.safetensors"));
  {
    const auto loaded = SafetensorsFile::open(file("w.safetensors"));
    at::Tensor w = loaded->get("w");
    w.fill_(42.0f);
    EXPECT_TRUE(at::equal(w, at::full({16}, 42.0f)));
  }
  EXPECT_EQ(read_bytes(file("w.safetensors")), bytes_before);
  EXPECT_TRUE(at::equal(SafetensorsFile::open(file("w.safetensors"))->get("w"), original));
}

TEST_F(SafetensorsTest, TensorKeepsTheMappingAliveAfterTheFileIsDropped) {
  swift::io::save_safetensors(file("w.safetensors"), {{"w", at::arange(1000, at::kLong)}});
  at::Tensor w;
  {
    auto loaded = SafetensorsFile::open(file("w.safetensors"));
    w = loaded->get("w");
  }
  EXPECT_EQ(w.sum().item<int64_t>(), 999 * 1000 / 2);
}

TEST_F(SafetensorsTest, NonContiguousTensorsAreSavedAsTheirValues) {
  const at::Tensor base = at::arange(12, at::kFloat).reshape({3, 4});
  swift::io::save_safetensors(file("w.safetensors"), {{"t", base.t()}, {"e", at::ones({1, 3}).expand({4, 3})}});
  const auto loaded = SafetensorsFile::open(file("w.safetensors"));
  EXPECT_TRUE(at::equal(loaded->get("t"), base.t()));
  EXPECT_TRUE(at::equal(loaded->get("e"), at::ones({4, 3})));
}

TEST_F(SafetensorsTest, SaveReplacesAnExistingFileAndLeavesNoTemporary) {
  swift::io::save_safetensors(file("w.safetensors"), {{"old", at::ones({3})}});
  swift::io::save_safetensors(file("w.safetensors"), {{"new", at::zeros({2})}});
  const auto loaded = SafetensorsFile::open(file("w.safetensors"));
  EXPECT_TRUE(loaded->contains("new"));
  EXPECT_FALSE(loaded->contains("old"));
  size_t files = 0;
  for ([[maybe_unused]] const auto& item : fs::directory_iterator(dir_.path())) ++files;
  EXPECT_EQ(files, 1u);
}

TEST_F(SafetensorsTest, SaveRejectsWhatSafetensorsCannotHold) {
  const auto path = file("bad.safetensors");
  EXPECT_THROW(swift::io::save_safetensors(path, {{"w", at::ones({1})}, {"w", at::ones({1})}}), UsageError);
  EXPECT_THROW(swift::io::save_safetensors(path, {{"__metadata__", at::ones({1})}}), UsageError);
  EXPECT_THROW(swift::io::save_safetensors(path, {{"w", at::ones({1}, at::kComplexDouble)}}), UsageError);
  EXPECT_THROW(swift::io::save_safetensors(path, {{"w", at::Tensor()}}), UsageError);
  EXPECT_THROW(swift::io::save_safetensors(path, {{"bad\xff", at::ones({1})}}), UsageError);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(SafetensorsTest, MissingTensorAndMissingFileNameWhatIsAbsent) {
  swift::io::save_safetensors(file("w.safetensors"), {{"w", at::ones({1})}});
  try {
    SafetensorsFile::open(file("w.safetensors"))->get("nope");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(e.message().find("w.safetensors"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("'nope'"), std::string::npos) << e.message();
  }
  try {
    SafetensorsFile::open(file("absent.safetensors"));
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(e.message().find("absent.safetensors"), std::string::npos) << e.message();
  }
}

// ---- Corrupt files: each must be a DataError that names the file and, where one is at fault, the tensor. ----

struct CorruptCase {
  const char* label;
  std::string bytes;    // the whole file
  const char* culprit;  // tensor (or metadata key) the message must name; "" when the file as a whole is bad
};

std::string f32_entry(const std::string& name, const std::string& shape, const std::string& offsets) {
  return "\"" + name + R"(":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
}

std::vector<CorruptCase> corrupt_cases() {
  const std::string ok_a = f32_entry("a", "[1]", "[0,4]");
  return {
      {"empty_file", "", ""},
      {"shorter_than_length_prefix", "\x05\x00\x00", ""},
      {"header_length_over_limit", le_u64(100'000'001) + "{}", ""},
      {"header_length_past_end_of_file", le_u64(1000) + "{}", ""},
      {"header_empty", le_u64(0), ""},
      {"header_not_json", raw_file("{not json", 0), ""},
      {"header_is_a_list", raw_file("[1,2]", 0), ""},
      {"header_not_utf8", raw_file("{" + f32_entry("w\xff", "[1]", "[0,4]") + "}", 4), ""},
      {"header_trailing_garbage", raw_file("{" + ok_a + "}x", 4), ""},
      {"entry_not_an_object", raw_file(R"({"a":5})", 0), "a"},
      {"missing_dtype", raw_file(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4), "a"},
      {"missing_shape", raw_file(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4), "a"},
      {"missing_data_offsets", raw_file(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "a"},
      {"unknown_dtype", raw_file(R"({"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1), "a"},
      {"dtype_not_a_string", raw_file(R"({"a":{"dtype":3,"shape":[1],"data_offsets":[0,4]}})", 4), "a"},
      {"shape_not_a_list", raw_file("{" + f32_entry("a", "1", "[0,4]") + "}", 4), "a"},
      {"negative_shape", raw_file("{" + f32_entry("a", "[-1]", "[0,4]") + "}", 4), "a"},
      {"fractional_shape", raw_file("{" + f32_entry("a", "[1.0]", "[0,4]") + "}", 4), "a"},
      {"string_shape", raw_file("{" + f32_entry("a", R"(["1"])", "[0,4]") + "}", 4), "a"},
      {"shape_overflows", raw_file("{" + f32_entry("a", "[4294967296,4294967296,4]", "[0,4]") + "}", 4), "a"},
      {"offsets_three_numbers", raw_file("{" + f32_entry("a", "[1]", "[0,4,4]") + "}", 4), "a"},
      {"offsets_negative", raw_file("{" + f32_entry("a", "[1]", "[-4,0]") + "}", 4), "a"},
      {"offsets_not_numbers", raw_file("{" + f32_entry("a", "[1]", R"(["0","4"])") + "}", 4), "a"},
      {"offsets_begin_after_end", raw_file("{" + f32_entry("a", "[1]", "[4,0]") + "}", 4), "a"},
      {"offsets_past_buffer_end", raw_file("{" + f32_entry("a", "[2]", "[0,8]") + "}", 4), "a"},
      {"byte_length_not_numel_times_size", raw_file("{" + f32_entry("a", "[2]", "[0,4]") + "}", 4), "a"},
      {"gap_between_tensors", raw_file("{" + ok_a + "," + f32_entry("b", "[1]", "[8,12]") + "}", 12), "b"},
      {"overlapping_tensors",
       raw_file("{" + f32_entry("a", "[2]", "[0,8]") + "," + f32_entry("b", "[1]", "[4,8]") + "}", 8), "b"},
      {"first_tensor_not_at_zero", raw_file("{" + f32_entry("a", "[1]", "[4,8]") + "}", 8), "a"},
      {"bytes_after_last_tensor", raw_file("{" + ok_a + "}", 8), "a"},
      {"duplicate_tensor_name", raw_file("{" + ok_a + "," + f32_entry("a", "[1]", "[4,8]") + "}", 8), "a"},
      {"duplicate_key_inside_entry",
       raw_file(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4), "a"},
      {"metadata_not_an_object", raw_file(R"({"__metadata__":"pt"})", 0), "__metadata__"},
      {"metadata_value_not_a_string", raw_file(R"({"__metadata__":{"format":1}})", 0), "format"},
  };
}

class CorruptFileTest : public ::testing::TestWithParam<CorruptCase> {
 protected:
  TempDir dir_;
};

TEST_P(CorruptFileTest, IsADataErrorNamingFileAndTensor) {
  const CorruptCase& c = GetParam();
  const fs::path path = dir_.path() / (std::string(c.label) + ".safetensors");
  write_bytes(path, c.bytes);
  try {
    SafetensorsFile::open(path);
    FAIL() << "opened a corrupt file (" << c.label << ")";
  } catch (const DataError& e) {
    EXPECT_NE(e.message().find(path.filename().string()), std::string::npos) << e.message();
    if (*c.culprit) {
      const std::string quoted = std::string("'").append(c.culprit).append("'");
      EXPECT_NE(e.message().find(quoted), std::string::npos) << e.message();
    }
    EXPECT_FALSE(e.hint().empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Header, CorruptFileTest, ::testing::ValuesIn(corrupt_cases()),
                         [](const ::testing::TestParamInfo<CorruptCase>& info) {
                           return std::string(info.param.label);
                         });

// Random byte flips and truncations of a valid file: open() either succeeds (and every tensor reads) or
// throws DataError; nothing else escapes and nothing crashes.
TEST_F(SafetensorsTest, RandomDamageIsADataErrorOrAValidFile) {
  const std::string valid = swift::io::serialize_safetensors(
      {{"w", at::randn({3, 4})}, {"b", at::arange(5, at::kLong)}, {"m", at::ones({2}, at::kBool)}}, {{"format", "pt"}});
  std::mt19937 random(1234);
  int rejected = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::string damaged = valid;
    const int flips = 1 + int(random() % 3);
    for (int i = 0; i < flips; ++i) damaged[random() % damaged.size()] = static_cast<char>(random() % 256);
    if (trial % 4 == 0) damaged.resize(random() % damaged.size());
    const fs::path path = file("fuzz.safetensors");
    write_bytes(path, damaged);
    try {
      const auto loaded = SafetensorsFile::open(path);
      for (const auto& entry : loaded->entries()) bits(loaded->get(entry.name)).sum();
    } catch (const DataError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 500);
}

// ---- Parity with the reference Python library (skipped when the project's .venv lacks it). ----

class ReferenceParityTest : public SafetensorsTest {
 protected:
  void SetUp() override {
    python_ = reference_python();
    if (!python_has(python_, "safetensors.torch"))
      SWIFT_REFERENCE_MISSING(python_ << " cannot import safetensors.torch; run scripts/setup.sh --tests for parity checks");
  }
  std::string python_;
};

// Python loads our file and saves it again with safetensors.torch.save_file: the bytes must be identical.
TEST_F(ReferenceParityTest, PythonReadsOurFileAndRewritesTheSameBytes) {
  NamedTensors tensors;
  for (const auto& dtype : kEveryDtype)
    tensors.emplace_back(std::string("layer.") + dtype.name, random_tensor(dtype.type, {2, 3}));
  tensors.emplace_back("b_scalar", random_tensor(at::kFloat, {}));
  tensors.emplace_back("a_empty", random_tensor(at::kBFloat16, {0}));
  tensors.emplace_back("ünïcode.weight", random_tensor(at::kFloat, {4}));
  swift::io::save_safetensors(file("ours.safetensors"), tensors, {{"format", "pt"}});

  write_bytes(file("rewrite.py"), R"(import sys
from safetensors import safe_open
from safetensors.torch import save_file
with safe_open(sys.argv[1], framework="pt") as f:
    metadata = f.metadata()
    tensors = {name: f.get_tensor(name) for name in f.keys()}
save_file(tensors, sys.argv[2], metadata=metadata)
)");
  ASSERT_EQ(run_python(python_, file("rewrite.py"),
                       file("ours.safetensors").string() + " " + file("theirs.safetensors").string()),
            0);
  EXPECT_EQ(read_bytes(file("ours.safetensors")), read_bytes(file("theirs.safetensors")));
}

// Python writes known values (arange cast to each dtype) and metadata; we must read the same.
TEST_F(ReferenceParityTest, ReadsWhatPythonWrites) {
  write_bytes(file("write.py"), R"(import sys, torch
from safetensors.torch import save_file
names = sys.argv[2].split(",")
dtypes = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
          "F8_E4M3FNUZ": torch.float8_e4m3fnuz, "F8_E5M2FNUZ": torch.float8_e5m2fnuz,
          "F8_E8M0": torch.float8_e8m0fnu, "C64": torch.complex64, "U16": torch.uint16,
          "U32": torch.uint32, "U64": torch.uint64}
tensors = {n: torch.arange(12).reshape(3, 4).to(dtypes[n]) for n in names}
save_file(tensors, sys.argv[1], metadata={"format": "pt", "source": "python"})
)");
  std::string names;
  for (const auto& dtype : kEveryDtype) names.append(names.empty() ? "" : ",").append(dtype.name);
  ASSERT_EQ(run_python(python_, file("write.py"), file("py.safetensors").string() + " " + names), 0);

  const auto loaded = SafetensorsFile::open(file("py.safetensors"));
  EXPECT_EQ(loaded->metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"source", "python"}}));
  for (const auto& dtype : kEveryDtype) {
    SCOPED_TRACE(dtype.name);
    const at::Tensor expected = at::arange(12, at::kLong).reshape({3, 4}).to(dtype.type);
    const at::Tensor got = loaded->get(dtype.name);
    EXPECT_EQ(got.scalar_type(), dtype.type);
    EXPECT_TRUE(at::equal(bits(got), bits(expected)));
  }
}

}  // namespace
