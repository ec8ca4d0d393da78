// Tokenizer encode speed: MB/s of UTF-8 input over a corpus of documents, one thread or a batch on N threads.
// Prints one JSON line. bench/bench_tokenizer.py runs it next to Hugging Face tokenizers on the same corpus.
//   swift_bench_tokenizer --tokenizer DIR --corpus FILE.jsonl [--threads 1] [--batch] [--repeat 3]
//   swift_bench_tokenizer --tokenizer DIR --dump_ids FILE.jsonl   (one JSON list of ids per input line)
//   swift_bench_tokenizer --tokenizer DIR --decode_ids FILE.jsonl (one JSON list of ids per line -> its text)
// FILE.jsonl holds one JSON string (a document) per line.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "swift/core/error.h"
#include "swift/tokenizer/tokenizer.h"

using swift::tokenizer::Tokenizer;

namespace {

std::vector<std::string> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  SWIFT_CHECK(in.good(), DataError, "cannot read " + path, "check the --corpus path");
  std::vector<std::string> docs;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) docs.push_back(nlohmann::json::parse(line).get<std::string>());
  }
  return docs;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string tokenizer_dir, corpus, dump, decode;
    int threads = 1, repeat = 3;
    bool batch = false;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        SWIFT_CHECK(i + 1 < argc, UsageError, a + " needs a value", "see the usage at the top of the source");
        return argv[++i];
      };
      if (a == "--tokenizer") {
        tokenizer_dir = value();
      } else if (a == "--corpus") {
        corpus = value();
      } else if (a == "--dump_ids") {
        dump = value();
      } else if (a == "--decode_ids") {
        decode = value();
      } else if (a == "--threads") {
        threads = std::stoi(value());
      } else if (a == "--repeat") {
        repeat = std::stoi(value());
      } else if (a == "--batch") {
        batch = true;
      } else {
        throw swift::UsageError("unknown flag " + a,
                                "swift_bench_tokenizer --tokenizer DIR --corpus FILE.jsonl [--threads N] [--batch]");
      }
    }
    SWIFT_CHECK(!tokenizer_dir.empty(), UsageError, "--tokenizer is required", "pass a model folder");
    auto t0 = std::chrono::steady_clock::now();
    auto tok = Tokenizer::load(tokenizer_dir);
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    if (!decode.empty()) {
      std::ifstream in(decode);
      for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        auto ids = nlohmann::json::parse(line).get<std::vector<int64_t>>();
        std::cout << nlohmann::json(tok->decode(ids)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "\n";
      }
      return 0;
    }
    if (!dump.empty()) {
      for (const std::string& doc : read_jsonl(dump)) std::cout << nlohmann::json(tok->encode(doc)).dump() << "\n";
      return 0;
    }
    SWIFT_CHECK(!corpus.empty(), UsageError, "--corpus is required", "pass a JSONL file of documents");
    std::vector<std::string> docs = read_jsonl(corpus);
    size_t bytes = 0;
    for (const auto& d : docs) bytes += d.size();
    double best = 1e30;
    size_t tokens = 0;
    for (int r = 0; r < repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      tokens = 0;
      if (batch) {
        for (const auto& ids : tok->encode_batch(docs, threads)) tokens += ids.size();
      } else {
        for (const auto& d : docs) tokens += tok->encode(d).size();
      }
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::printf("{\"docs\": %zu, \"bytes\": %zu, \"tokens\": %zu, \"seconds\": %.4f, \"mb_per_s\": %.2f, "
                "\"load_seconds\": %.3f, \"threads\": %d, \"batch\": %s}\n",
                docs.size(), bytes, tokens, best, bytes / best / 1e6, load_s, threads, batch ? "true" : "false");
    return 0;
  } catch (const swift::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.message().c_str());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return int(e.code());
  }
}
