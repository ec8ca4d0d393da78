// Dataset files and row normalisation, following ms-swift's AutoPreprocessor.
#include <gtest/gtest.h>

#include <fstream>

#include "swift/core/error.h"
#include "swift/data/dataset.h"
#include "test_util.h"

using namespace swift;
using nlohmann::json;

namespace {
json msgs(std::initializer_list<std::pair<const char*, const char*>> list) {
  json out = json::array();
  for (auto& [r, c] : list) out.push_back({{"role", r}, {"content", c}});
  return out;
}
}  // namespace

TEST(Dataset, NormalisesEveryLayout) {
  // OpenAI messages, with a system column merged in.
  auto r = data::normalise_row(json::parse(R"({"messages": [{"role": "user", "content": "hi"},
                                               {"role": "assistant", "content": "yo"}], "system": "be nice"})"), "t");
  EXPECT_EQ(r["messages"], msgs({{"system", "be nice"}, {"user", "hi"}, {"assistant", "yo"}}));
  // ShareGPT from/value.
  r = data::normalise_row(json::parse(R"({"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]})"), "t");
  EXPECT_EQ(r["messages"], msgs({{"user", "q"}, {"assistant", "a"}}));
  // Alpaca: instruction + "\n" + input, as ms-swift.
  r = data::normalise_row(json::parse(R"({"instruction": "Translate", "input": "bonjour", "output": "hello"})"), "t");
  EXPECT_EQ(r["messages"], msgs({{"user", "Translate\nbonjour"}, {"assistant", "hello"}}));
  // query/response with history and system.
  r = data::normalise_row(json::parse(R"({"system": "s", "history": [["q1", "a1"]], "query": "q2", "response": "a2"})"), "t");
  EXPECT_EQ(r["messages"], msgs({{"system", "s"}, {"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}, {"assistant", "a2"}}));
  // Aliases: prompt/completion; unknown columns survive.
  r = data::normalise_row(json::parse(R"({"prompt": "p", "completion": "c", "id": 7})"), "t");
  EXPECT_EQ(r["messages"], msgs({{"user", "p"}, {"assistant", "c"}}));
  EXPECT_EQ(r["id"], 7);
  // Per-message loss is kept.
  r = data::normalise_row(json::parse(R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "loss": false}]})"), "t");
  EXPECT_EQ(r["messages"][1]["loss"], false);
}

TEST(Dataset, BadRowsAreDataErrorsNamingTheRow) {
  try {
    data::normalise_row(json::parse(R"({"foo": 1})"), "data.jsonl row 3");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("data.jsonl row 3"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("foo"), std::string::npos);
  }
  EXPECT_THROW(data::normalise_row(json::parse(R"({"messages": []})"), "t"), DataError);
  EXPECT_THROW(data::normalise_row(json::parse(R"({"messages": [{"role": "wizard", "content": "x"}]})"), "t"), DataError);
  EXPECT_THROW(data::normalise_row(json::parse(R"({"messages": [{"content": "x"}]})"), "t"), DataError);
}

TEST(Dataset, ReadsJsonlJsonCsvAndSamples) {
  test::TempDir tmp;
  std::ofstream(tmp / "a.jsonl") << R"({"query": "1", "response": "a"})" << "\n\n" << R"({"query": "2", "response": "b"})" << "\n";
  std::ofstream(tmp / "b.json") << R"([{"query": "3", "response": "c"}])";
  std::ofstream(tmp / "c.csv") << "query,response\n\"4, with comma\",\"multi\nline \"\"quoted\"\"\"\n5,e\n";
  auto rows = data::load_datasets({(tmp / "a.jsonl").string(), (tmp / "b.json").string(), (tmp / "c.csv").string()}, 0);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3]["messages"][0]["content"], "4, with comma");
  EXPECT_EQ(rows[3]["messages"][1]["content"], "multi\nline \"quoted\"");
  EXPECT_EQ(rows[4]["messages"][1]["content"], "e");
  EXPECT_EQ(data::load_datasets({(tmp / "a.jsonl").string() + "#1"}, 0).size(), 1u);
  EXPECT_EQ(data::load_datasets({(tmp / "a.jsonl").string() + "#5"}, 0).size(), 5u);  // repeats + remainder

  std::ofstream(tmp / "bad.jsonl") << R"({"query": "1", "response": "a"})" << "\n{oops\n";
  try {
    data::read_rows(tmp / "bad.jsonl");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
  std::ofstream(tmp / "bad.csv") << "a,b\n1,2,3\n";
  EXPECT_THROW(data::read_rows(tmp / "bad.csv"), DataError);
  EXPECT_THROW(data::read_rows(tmp / "x.parquet"), DataError);  // missing
  std::ofstream(tmp / "text.parquet") << R"({"query": "1", "response": "a"})" << "\n";
  EXPECT_THROW(data::read_rows(tmp / "text.parquet"), DataError);  // not Parquet
  // Numbers beyond a double (found by fuzzing; the .json reader let nlohmann's out_of_range escape).
  std::ofstream(tmp / "huge.json") << R"([{"query": 3333333e3336333, "response": "a"}])";
  EXPECT_THROW(data::read_rows(tmp / "huge.json"), DataError);
  std::ofstream(tmp / "huge.jsonl") << R"({"query": 1e999, "response": "a"})" << "\n";
  EXPECT_THROW(data::read_rows(tmp / "huge.jsonl"), DataError);
  EXPECT_THROW(data::parse_dataset_spec("a.jsonl#many"), UsageError);
  EXPECT_EQ(data::parse_dataset_spec("a.jsonl#12").sample, 12);
}

TEST(Dataset, TextFilesFoldersAndColumnRemap) {
  test::TempDir tmp;
  std::filesystem::create_directories(tmp / "corpus");
  std::ofstream(tmp / "corpus" / "b.txt") << "second file line\n\n";
  std::ofstream(tmp / "corpus" / "a.txt") << "first line\r\nsecond line\n";
  std::ofstream(tmp / "corpus" / "notes.md") << "ignored";
  auto rows = data::load_datasets({(tmp / "corpus").string()}, 0);
  ASSERT_EQ(rows.size(), 3u);  // a.txt (2 lines) then b.txt; blank lines and other extensions skipped
  EXPECT_EQ(rows[0]["messages"], msgs({{"assistant", "first line"}}));
  EXPECT_EQ(rows[2]["messages"], msgs({{"assistant", "second file line"}}));

  std::ofstream(tmp / "odd.jsonl") << R"({"src": "bonjour", "tgt": "hello"})" << "\n";
  data::DatasetOptions options;
  options.columns = data::parse_columns(R"({"src": "query", "tgt": "response"})");
  rows = data::load_datasets({(tmp / "odd.jsonl").string()}, 0, "--dataset", options);
  EXPECT_EQ(rows[0]["messages"], msgs({{"user", "bonjour"}, {"assistant", "hello"}}));
  EXPECT_THROW(data::load_datasets({(tmp / "odd.jsonl").string()}, 0), DataError);  // without the remap
  EXPECT_THROW(data::parse_columns("[1]"), UsageError);
  EXPECT_THROW(data::parse_columns(R"({"a": 1})"), UsageError);
  std::filesystem::create_directories(tmp / "empty");
  EXPECT_THROW(data::load_datasets({(tmp / "empty").string()}, 0), DataError);
}

// problem/solution rows (AI-MO/NuminaMath-TIR's): the problem is the query, the solution the reply and, as ms-swift
// keeps it, still a column (GRPO's accuracy reward reads it).
TEST(Dataset, ProblemAndSolutionRowsKeepTheSolution) {
  const auto row = data::normalise_row({{"problem", "1+1?"}, {"solution", "\\boxed{2}"}}, "row 1");
  ASSERT_EQ(row["messages"].size(), 2u);
  EXPECT_EQ(row["messages"][0]["role"], "user");
  EXPECT_EQ(row["messages"][0]["content"], "1+1?");
  EXPECT_EQ(row["messages"][1]["content"], "\\boxed{2}");
  EXPECT_EQ(row["solution"], "\\boxed{2}");
  EXPECT_FALSE(row.contains("problem"));
}
