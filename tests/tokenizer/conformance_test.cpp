// Conformance with Hugging Face tokenizers on real vocabularies (Qwen3, Llama 3, Mistral 7B) over the hard
// strings: identical ids with and without special tokens, identical decode, and streaming decode that adds up
// to the full decode. Reference: tests/tokenizer/make_reference.py (tokenizers from PyPI), exact equality.
#include <gtest/gtest.h>

#include "swift/tokenizer/tokenizer.h"
#include "swift/tokenizer/unicode.h"
#include "tokenizer_test_util.h"
#include "skip.h"

namespace swift::tokenizer::test {
namespace {

std::string show(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 80)) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(char(c));
    }
  }
  return s.size() > 80 ? out + "..." : out;
}

std::string show_ids(const std::vector<int64_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size() && i < 40; ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + (ids.size() > 40 ? ",...]" : "]");
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fs::path ref = reference_dir();
    if (ref.empty()) SWIFT_REFERENCE_MISSING("SWIFT_TOKENIZER_REF_DIR is not set (run through ctest)");
    if (fs::exists(ref / "SKIPPED")) SWIFT_REFERENCE_MISSING("reference skipped: " << read_file(ref / "SKIPPED"));
    fs::path folder = assets_dir() / GetParam();
    ASSERT_TRUE(fs::exists(folder / "tokenizer.json")) << "no tokenizer assets at " << folder.string();
    if (!fs::exists(ref / (GetParam() + ".json"))) SWIFT_REFERENCE_MISSING("no reference for " << GetParam());
    tok_ = Tokenizer::load(folder);
    auto ref_json = nlohmann::json::parse(read_file(ref / (GetParam() + ".json")));
    cases_ = ref_json["cases"];
    random_decodes_ = ref_json["random_decodes"];
    strings_ = hard_strings();
    ASSERT_EQ(cases_.size(), strings_.size()) << "reference is stale: rerun ctest -R tokenizer_make_reference";
  }
  std::unique_ptr<Tokenizer> tok_;
  nlohmann::json cases_, random_decodes_;
  std::vector<std::string> strings_;
};

TEST_P(Conformance, IdsMatchHuggingFace) {
  size_t same = 0;
  for (size_t i = 0; i < strings_.size(); ++i) {
    auto want = cases_[i]["ids"].get<std::vector<int64_t>>();
    auto got = tok_->encode(strings_[i]);
    if (got == want) {
      ++same;
    } else {
      ADD_FAILURE() << GetParam() << " string " << i << " \"" << show(strings_[i]) << "\"\n  want " << show_ids(want)
                    << "\n  got  " << show_ids(got);
    }
  }
  std::printf("[ %s ] %zu/%zu strings with identical ids\n", GetParam().c_str(), same, strings_.size());
}

TEST_P(Conformance, SpecialTokenIdsMatchHuggingFace) {
  for (size_t i = 0; i < strings_.size(); ++i) {
    auto want = cases_[i]["ids_special"].get<std::vector<int64_t>>();
    EXPECT_EQ(tok_->encode(strings_[i], true), want) << GetParam() << " string " << i << " \"" << show(strings_[i]) << "\"";
  }
}

TEST_P(Conformance, DecodeMatchesHuggingFace) {
  size_t round_trips = 0;
  for (size_t i = 0; i < strings_.size(); ++i) {
    auto ids = cases_[i]["ids"].get<std::vector<int64_t>>();
    std::string decoded = tok_->decode(ids);
    EXPECT_EQ(decoded, cases_[i]["decoded"].get<std::string>()) << GetParam() << " string " << i;
    auto ids_special = cases_[i]["ids_special"].get<std::vector<int64_t>>();
    EXPECT_EQ(tok_->decode(ids_special, true), cases_[i]["decoded_skip"].get<std::string>())
        << GetParam() << " string " << i;
    round_trips += decoded == strings_[i];
  }
  std::printf("[ %s ] %zu/%zu strings round-trip exactly (as in HF)\n", GetParam().c_str(), round_trips,
              strings_.size());
}

TEST_P(Conformance, StreamingDecodeConcatenatesToFullDecode) {
  for (size_t i = 0; i < strings_.size(); ++i) {
    for (bool skip : {false, true}) {
      auto ids = cases_[i]["ids_special"].get<std::vector<int64_t>>();
      StreamDecoder stream(*tok_, skip);
      std::string all;
      for (int64_t id : ids) {
        std::string piece = stream.push(id);
        // Never half a character: every piece is valid UTF-8 on its own.
        EXPECT_TRUE(is_valid_utf8(piece)) << GetParam() << " string " << i;
        all += piece;
      }
      all += stream.flush();
      EXPECT_EQ(all, tok_->decode(ids, skip)) << GetParam() << " string " << i << " skip=" << skip;
    }
  }
}

TEST_P(Conformance, DecodeOfArbitraryIdsMatchesHuggingFace) {
  // Model output need not be valid text: bytes cut mid-character, special tokens anywhere, unknown ids.
  for (size_t i = 0; i < random_decodes_.size(); ++i) {
    auto ids = random_decodes_[i]["ids"].get<std::vector<int64_t>>();
    EXPECT_EQ(tok_->decode(ids), random_decodes_[i]["decoded"].get<std::string>()) << GetParam() << " sequence " << i;
    EXPECT_EQ(tok_->decode(ids, true), random_decodes_[i]["decoded_skip"].get<std::string>()) << i;
    for (bool skip : {false, true}) {
      StreamDecoder stream(*tok_, skip);
      std::string all;
      for (int64_t id : ids) {
        std::string piece = stream.push(id);
        EXPECT_TRUE(is_valid_utf8(piece));
        all += piece;
      }
      EXPECT_EQ(all + stream.flush(), tok_->decode(ids, skip)) << GetParam() << " sequence " << i << " skip=" << skip;
    }
  }
}

TEST_P(Conformance, BatchEncodeEqualsSequential) {
  std::vector<std::string> texts;
  for (int rep = 0; rep < 4; ++rep) texts.insert(texts.end(), strings_.begin(), strings_.end());
  auto batch = tok_->encode_batch(texts, 4, true);
  ASSERT_EQ(batch.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(batch[i], cases_[i % strings_.size()]["ids_special"].get<std::vector<int64_t>>()) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, Conformance, ::testing::Values("qwen3", "llama3", "mistral7b", "gemma_style",
                                                                      "deepseek_style", "phi3_style", "phi4_style",
                                                                      "glm4_style", "internlm2_style"));

}  // namespace
}  // namespace swift::tokenizer::test
