// The data side of training: the cached-dataset format (round trip, corrupt files), --lazy_tokenize giving the
// same micro-batches as eager encoding, and --streaming (order, resume at a saved position, shuffle buffer).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "swift/core/error.h"
#include "swift/data/row_stream.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/template/template.h"
#include "swift/template/template_meta.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/data/dataset_cache.h"
#include "swift/data/lazy_data.h"
#include "swift/data/streaming_data.h"
#include "swift/data/train_data.h"
#include "test_util.h"

using namespace swift;
using nlohmann::json;

namespace {

const std::string kTinyModel = std::string(SWIFT_SOURCE_DIR) + "/configs/models/qwen3-tiny";

struct Chat {
  std::unique_ptr<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::load(kTinyModel);
  templates::Template chat{templates::find_template_meta("qwen3"), *tok};
};

json row(int i, int reply_words = 1) {
  std::string reply = std::to_string(i * 3);
  for (int w = 1; w < reply_words; ++w) reply += " and more words";
  return {{"messages", json::array({{{"role", "user"}, {"content", "what is " + std::to_string(i) + " times 3?"}},
                                    {{"role", "assistant"}, {"content", reply}}})}};
}

std::vector<json> rows(int n) {
  std::vector<json> out;
  for (int i = 0; i < n; ++i) out.push_back(row(i));
  return out;
}

std::vector<std::vector<int64_t>> draw(data::TrainData& data, int batches) {
  std::vector<std::vector<int64_t>> out;
  for (int b = 0; b < batches; ++b)
    for (const auto* e : data.next_micro_batch()) out.push_back(e->input_ids);
  return out;
}

// A .jsonl of n query/response rows (row i answers i), with a blank line in the middle.
std::filesystem::path write_jsonl(const test::TempDir& dir, int n, const std::string& name = "d.jsonl") {
  const auto path = dir / name;
  std::ofstream out(path);
  for (int i = 0; i < n; ++i) {
    out << R"({"query": "q)" << i << R"(", "response": ")" << i << "\"}\n";
    if (i == n / 2) out << "\n";
  }
  return path;
}

int answer_of(const json& normalised) { return std::stoi(normalised["messages"].back()["content"].get<std::string>()); }

}  // namespace

TEST(DatasetCache, RoundTripKeepsEveryTokenAndLabel) {
  test::TempDir dir;
  std::vector<data::Example> examples = {{{1, 2, 3}, {-100, 2, 3}, {}, {}}, {{7}, {7}, {}, {}}, {{151643, 5, 6, 9}, {-100, -100, 6, 9}, {}, {}}};
  data::CacheInfo info;
  info.template_name = "qwen3";
  info.tokenizer_fingerprint = "abc";
  info.max_length = 128;
  data::write_dataset_cache(dir / "out" / "train", examples, info);
  for (const auto& path : {dir / "out", dir / "out" / "train"}) {  // the export folder or its train/ split
    const auto cache = data::read_dataset_cache(path, "train", "--cached_dataset");
    ASSERT_EQ(cache.examples.size(), examples.size());
    for (size_t i = 0; i < examples.size(); ++i) {
      EXPECT_EQ(cache.examples[i].input_ids, examples[i].input_ids);
      EXPECT_EQ(cache.examples[i].labels, examples[i].labels);
    }
    EXPECT_EQ(cache.info.examples, 3u);
    EXPECT_EQ(cache.info.tokens, 8u);
    EXPECT_EQ(cache.info.label_tokens, 4u);  // the first label of each example is never predicted
    EXPECT_EQ(cache.info.template_name, "qwen3");
    EXPECT_EQ(cache.info.max_length, 128);
  }
  const auto file = io::SafetensorsFile::open(dir / "out" / "train" / "tokens.safetensors");
  EXPECT_EQ(file->metadata().at("format"), "swift.cached_dataset");
  EXPECT_EQ(file->entry("offsets").shape, std::vector<int64_t>{4});
}

TEST(DatasetCache, CorruptOrMissingFilesAreDataErrorsNamingThePath) {
  test::TempDir dir;
  data::CacheInfo info;
  data::write_dataset_cache(dir / "c", {{{1, 2}, {1, 2}, {}, {}}}, info);
  auto expect_error = [&](const std::filesystem::path& path, const std::string& needle) {
    try {
      data::read_dataset_cache(path, "train", "--cached_dataset");
      ADD_FAILURE() << "no error for " << needle;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(dir / "nope", (dir / "nope").string());
  std::filesystem::create_directories(dir / "empty");
  expect_error(dir / "empty", "is not a cached dataset");
  // Truncated tensor file.
  const std::string bytes = test::read_bytes(dir / "c" / "tokens.safetensors");
  test::write_bytes(dir / "c" / "tokens.safetensors", bytes.substr(0, bytes.size() - 4));
  expect_error(dir / "c", "tokens.safetensors");
  test::write_bytes(dir / "c" / "tokens.safetensors", bytes);
  // Counts that disagree with cache_info.json.
  json j = io::read_json_file(dir / "c" / "cache_info.json");
  j["examples"] = 2;
  io::write_json_file(dir / "c" / "cache_info.json", j);
  expect_error(dir / "c", "cache_info.json says");
  // Another format version.
  j["examples"] = 1;
  j["version"] = 99;
  io::write_json_file(dir / "c" / "cache_info.json", j);
  expect_error(dir / "c", "version 99");
  // Offsets out of order.
  j["version"] = 1;
  io::write_json_file(dir / "c" / "cache_info.json", j);
  io::save_safetensors(dir / "c" / "tokens.safetensors",
                       {{"input_ids", at::tensor({1, 2}, at::kInt)}, {"labels", at::tensor({1, 2}, at::kInt)},
                        {"offsets", at::tensor(std::vector<int64_t>{0, 3}, at::kLong)}});
  expect_error(dir / "c", "offsets");
}

TEST(DatasetCache, RefusesACacheOfAnotherTokenizerOrTemplate) {
  Chat c;
  data::CachedDataset cache;
  cache.dir = "/x";
  cache.info.template_name = "qwen3";
  cache.info.tokenizer_fingerprint = data::tokenizer_fingerprint(*c.tok);
  data::CacheInfo expected = cache.info;
  EXPECT_NO_THROW(data::check_cache_fits(cache, expected, "--cached_dataset"));
  expected.template_name = "llama3";
  EXPECT_THROW(data::check_cache_fits(cache, expected, "--cached_dataset"), UsageError);
  expected = cache.info;
  expected.tokenizer_fingerprint = "0000000000000000";
  EXPECT_THROW(data::check_cache_fits(cache, expected, "--cached_dataset"), UsageError);
  expected = cache.info;
  expected.system = "be brief";
  EXPECT_THROW(data::check_cache_fits(cache, expected, "--cached_dataset"), UsageError);
  EXPECT_EQ(data::tokenizer_fingerprint(*c.tok), cache.info.tokenizer_fingerprint);  // stable
}

TEST(LazyData, SameMicroBatchesAsEagerEncoding) {
  Chat c;
  const auto r = rows(13);
  data::EncodeReport report;
  data::InMemoryData eager(data::encode_rows(r, c.chat, 0, data::Truncation::kDelete, report), 3, 7);
  data::LazyData lazy(r, c.chat, 0, data::Truncation::kDelete, 3, 7);
  EXPECT_EQ(eager.batches_per_epoch(), lazy.batches_per_epoch());
  for (int b = 0; b < 12; ++b) {  // across epochs
    const auto e = eager.next_micro_batch(), l = lazy.next_micro_batch();
    ASSERT_EQ(e.size(), l.size());
    for (size_t i = 0; i < e.size(); ++i) {
      EXPECT_EQ(e[i]->input_ids, l[i]->input_ids);
      EXPECT_EQ(e[i]->labels, l[i]->labels);
    }
  }
  EXPECT_EQ(lazy.report(), "");
}

TEST(LazyData, ReplacesTooLongRowsDeterministicallyAndResumes) {
  Chat c;
  auto r = rows(10);
  r[2] = row(2, 40);  // far longer than max_length
  r[5] = row(5, 40);
  const int64_t max_length = 30;
  data::LazyData a(r, c.chat, max_length, data::Truncation::kDelete, 2, 3);
  const auto first = draw(a, 3);
  const json state = a.state();
  const auto rest = draw(a, 8);
  for (const auto& ids : first) EXPECT_LE(ids.size(), static_cast<size_t>(max_length));
  EXPECT_NE(a.report().find("2 longer than --max_length"), std::string::npos) << a.report();
  data::LazyData b(r, c.chat, max_length, data::Truncation::kDelete, 2, 3);
  b.restore(state);
  EXPECT_EQ(draw(b, 8), rest);
  // Rows that are all unusable end in a clear error instead of a loop.
  std::vector<json> bad = {row(0, 40), row(1, 40)};
  data::LazyData hopeless(bad, c.chat, max_length, data::Truncation::kDelete, 1, 0);
  EXPECT_THROW(hopeless.next_micro_batch(), DataError);
}

TEST(RowStream, ReadsJsonlInOrderAndSeeksBack) {
  test::TempDir dir;
  write_jsonl(dir, 9);
  data::RowStream stream({(dir / "d.jsonl").string(), (dir / "d.jsonl").string() + "#3"}, {});
  std::vector<int> seen;
  std::vector<data::StreamPosition> at;
  data::StreamPosition after4;
  while (auto r = stream.next()) {
    seen.push_back(answer_of(r->first));
    at.push_back(r->second);
    if (seen.size() == 4) after4 = stream.position();
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2}));  // #3: the first 3 rows, in order
  for (size_t i = 0; i < at.size(); ++i) EXPECT_EQ(answer_of(stream.read_at(at[i])), seen[i]);
  stream.seek(after4);
  std::vector<int> again;
  while (auto r = stream.next()) again.push_back(answer_of(r->first));
  EXPECT_EQ(again, std::vector<int>(seen.begin() + 4, seen.end()));
  EXPECT_EQ(data::StreamPosition::from_json(after4.to_json()), after4);
}

TEST(RowStream, MalformedLineNamesFileAndLine) {
  test::TempDir dir;
  {
    std::ofstream out(dir / "bad.jsonl");
    out << R"({"query": "a", "response": "b"})" << "\n" << "{not json\n";
  }
  data::RowStream stream({(dir / "bad.jsonl").string()}, {});
  ASSERT_TRUE(stream.next());
  try {
    stream.next();
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
}

TEST(StreamingData, ShuffleBufferIsSeededAndResumesExactly) {
  Chat c;
  test::TempDir dir;
  write_jsonl(dir, 23);
  auto make = [&](int64_t buffer, uint64_t seed) {
    data::StreamingOptions o;
    o.batch_size = 2;
    o.seed = seed;
    o.shuffle_buffer_size = buffer;
    return std::make_unique<data::StreamingData>(
        std::make_unique<data::RowStream>(std::vector<std::string>{(dir / "d.jsonl").string()}, data::DatasetOptions{}),
        c.chat, o);
  };
  // Buffer 1: file order, wrapping into the next epoch.
  auto ordered = make(1, 0);
  const auto in_order = draw(*ordered, 13);  // 26 examples: one pass of 23 and 3 more
  {
    auto direct = make(1, 0);
    EXPECT_EQ(draw(*direct, 13), in_order);
  }
  EXPECT_EQ(in_order[0], in_order[23]);
  EXPECT_EQ(ordered->epoch(), 1);
  // A buffer shuffles, the same way for the same seed, differently for another; each pass is a permutation.
  auto a = make(8, 1), b = make(8, 1), other = make(8, 2);
  const auto sa = draw(*a, 5);
  EXPECT_EQ(draw(*b, 5), sa);
  EXPECT_NE(draw(*other, 5), sa);
  EXPECT_NE(sa, std::vector<std::vector<int64_t>>(in_order.begin(), in_order.begin() + 10));
  auto full = make(8, 1);
  const auto pass = draw(*full, 23);  // 46 examples: two passes
  EXPECT_EQ(std::set<std::vector<int64_t>>(pass.begin(), pass.begin() + 23).size(), 23u);
  EXPECT_EQ(std::set<std::vector<int64_t>>(pass.begin() + 23, pass.end()).size(), 23u);
  EXPECT_NE(std::vector<std::vector<int64_t>>(pass.begin(), pass.begin() + 23),
            std::vector<std::vector<int64_t>>(pass.begin() + 23, pass.end()));  // each epoch reshuffles
  // Resume: a state saved mid-stream (buffer full, mid-file; and after the epoch boundary) continues exactly.
  for (int at : {3, 14}) {
    auto run = make(8, 1);
    draw(*run, at);
    const json state = json::parse(run->state().dump());  // through text, as trainer_state.json
    const auto tail = draw(*run, 10);
    auto resumed = make(8, 1);
    resumed->restore(state);
    EXPECT_EQ(draw(*resumed, 10), tail) << "resumed after " << at << " batches";
  }
  // A state of another kind is refused.
  auto fresh = make(8, 1);
  EXPECT_THROW(fresh->restore({{"kind", "in_memory"}, {"epoch", 0}, {"position", 0}}), DataError);
}

TEST(StreamingData, SkipsRowsWithoutLossAndCountsThem) {
  Chat c;
  test::TempDir dir;
  {
    std::ofstream out(dir / "d.jsonl");
    out << R"({"query": "a", "response": "1"})" << "\n"
        << R"({"query": "a prompt without a reply"})" << "\n"
        << R"({"query": "b", "response": "2"})" << "\n";
  }
  data::StreamingOptions o;
  o.batch_size = 2;
  o.shuffle_buffer_size = 1;
  data::StreamingData data(std::make_unique<data::RowStream>(std::vector<std::string>{(dir / "d.jsonl").string()},
                                                              data::DatasetOptions{}),
                            c.chat, o);
  EXPECT_EQ(data.next_micro_batch().size(), 2u);
  EXPECT_NE(data.report().find("1 dropped with no token to learn"), std::string::npos) << data.report();
}
