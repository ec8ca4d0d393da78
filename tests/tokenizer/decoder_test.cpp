// Decoders on hand-made tokenizer.json snippets. Expected values: Hugging Face tokenizers 0.23
// (decoder.decode(tokens)), exact.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "swift/core/error.h"
#include "swift/tokenizer/decoder.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {
namespace {

std::string run(const char* json, std::vector<std::string> tokens) {
  return Decoder::from_json(nlohmann::json::parse(json))->decode(std::move(tokens));
}

TEST(Decoder, ByteLevel) {
  const char* bl = R"({"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true})";
  EXPECT_EQ(run(bl, {"Hello", "\u0120world", "\u0120", "\u00f0\u0141", "\u013a", "\u0122"}), "Hello world \U0001F600");
  // An incomplete character becomes U+FFFD; a token outside the byte alphabet keeps its own bytes.
  EXPECT_EQ(run(bl, {"\u0120", "\u00f0\u0141", "<|im_end|>", "\u00c3\u00a9"}), " \ufffd<|im_end|>\u00e9");
  EXPECT_EQ(run(bl, {"\u4f60"}), "\u4f60");
}

TEST(Decoder, ByteFallback) {
  EXPECT_EQ(run(R"({"type":"ByteFallback"})", {"<0x61>", "<0xC3>", "<0xA9>", "x", "<0xE2>", "<0x82>", "y", "<0xFF>"}),
            "a\u00e9x\ufffd\ufffdy\ufffd");
}

TEST(Decoder, Metaspace) {
  EXPECT_EQ(run(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true})",
                {"\u2581Hello", "\u2581world", "\u2581\u2581x"}),
            "Hello world  x");
  EXPECT_EQ(run(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true})",
                {"\u2581Hello", "\u2581world"}),
            " Hello world");
}

TEST(Decoder, FuseStripReplace) {
  EXPECT_EQ(run(R"({"type":"Fuse"})", {"a", "b", " c"}), "ab c");
  EXPECT_EQ(run(R"({"type":"Strip","content":" ","start":1,"stop":0})", {"  a ", " b"}), " a b");
  EXPECT_EQ(run(R"({"type":"Strip","content":" ","start":0,"stop":2})", {"a   ", "b"}), "a b");
  EXPECT_EQ(run(R"({"type":"Replace","pattern":{"String":"▁"},"content":" "})", {"\u2581a\u2581b", "c"}), " a bc");
}

TEST(Decoder, MistralSequence) {
  const char* seq = R"({"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},
    {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]})";
  EXPECT_EQ(run(seq, {"\u2581Hello", "\u2581", "<0xE2>", "<0x82>", "<0xAC>", "!"}), "Hello \u20ac!");
}

TEST(Decoder, BpeAndWordPiece) {
  EXPECT_EQ(run(R"({"type":"BPEDecoder","suffix":"</w>"})", {"hel", "lo</w>", "world</w>"}), "hello world");
  EXPECT_EQ(run(R"({"type":"WordPiece","prefix":"##","cleanup":true})", {"hel", "##lo", "world", "!", "do", "n't"}),
            "hello world! don't");
}

TEST(Decoder, Errors) {
  EXPECT_THROW(run(R"({"type":"CTCx"})", {}), DataError);
  EXPECT_THROW(run(R"({"type":"Strip","content":"ab","start":1,"stop":0})", {}), DataError);
}

TEST(Utf8, LossyDecodingReplacesMaximalSubparts) {
  // Python: bytes.decode("utf-8", errors="replace"), the same policy as Rust's from_utf8_lossy.
  EXPECT_EQ(utf8_lossy("a\xE2\x82" "b"), "a\ufffd" "b");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), "\ufffd");
  EXPECT_EQ(utf8_lossy("\xC0\xAF"), "\ufffd\ufffd");
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\ufffd\ufffd\ufffd");  // a surrogate
  EXPECT_EQ(utf8_lossy("\xF4\x90\x80\x80"), "\ufffd\ufffd\ufffd\ufffd");
  EXPECT_EQ(utf8_lossy("ok \xE2\x82\xAC"), "ok \u20ac");
  EXPECT_TRUE(is_valid_utf8("\u20ac\U0001F600"));
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));
}

}  // namespace
}  // namespace swift::tokenizer
