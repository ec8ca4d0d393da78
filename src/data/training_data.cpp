// The training and validation examples of a job (see training_data.h).
#include "swift/data/training_data.h"

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/data/dataset_cache.h"
#include "swift/data/lazy_data.h"
#include "swift/data/packing.h"
#include "swift/data/row_stream.h"
#include "swift/data/streaming_data.h"
#include "swift/data/training_rows.h"

namespace swift::data {

namespace {

// The examples of --cached_dataset / --cached_val_dataset folders, checked against the encoding training would use
// (a cache made with another tokenizer, template, --loss_scale or --system would train on wrong tokens).
std::vector<Example> read_cached(const std::vector<std::string>& dirs, const std::string& split, const std::string& flag,
                                 const CacheInfo& expected, int64_t max_length) {
  std::vector<Example> out;
  for (const auto& dir : dirs) {
    auto cache = read_dataset_cache(dir, split, flag);
    check_cache_fits(cache, expected, flag);
    size_t too_long = 0;
    for (auto& e : cache.examples) {
      if (static_cast<int64_t>(e.input_ids.size()) > max_length) {
        ++too_long;  // as ms-swift, a cache encoded with a larger --max_length is filtered
        continue;
      }
      out.push_back(std::move(e));
    }
    log_info(flag, " ", cache.dir.string(), ": ", cache.examples.size() - too_long, " examples",
             too_long ? " (" + std::to_string(too_long) + " longer than --max_length left out)" : std::string(),
             "; encoded from ", cache.info.encode_report);
  }
  return out;
}

template <typename T>
void append(std::vector<T>& to, std::vector<T>&& more) {
  to.insert(to.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

}  // namespace

TrainingData load_training_data(const DataOptions& options, const Encoding& encoding, int64_t global_batch,
                                const RowPreparation& prepare_rows) {
  TrainingData out;
  const int64_t max_length = encoding.max_length;
  std::vector<nlohmann::json> rows, val_rows;
  if (options.streaming) {
    if (options.split_dataset_ratio > 0)
      log_info("--streaming: --split_dataset_ratio is ignored (as ms-swift); give --val_dataset for validation");
    if (!options.val_datasets.empty())
      val_rows = load_datasets(options.val_datasets, options.data_seed, "--val_dataset", options.reading());
  } else {
    auto loaded = load_train_rows(options);
    rows = std::move(loaded.train);
    val_rows = std::move(loaded.val);
    if (prepare_rows) {
      prepare_rows(rows, options.data_seed, "the training rows");
      prepare_rows(val_rows, options.data_seed, "the validation rows (--val_dataset, --split_dataset_ratio)");
    }
  }

  CacheInfo expected;
  if (!options.cached_dataset.empty() || !options.cached_val_dataset.empty())
    expected = cache_identity(options, encoding.template_name, encoding.tokenizer);

  if (!val_rows.empty()) {
    EncodeReport val_report;
    out.val = encode_rows(val_rows, encoding.chat, max_length, options.truncation, val_report, "--val_dataset", options.num_proc);
    log_info("validation data: ", val_report.summary());
  }
  if (!options.cached_val_dataset.empty())
    append(out.val, read_cached(options.cached_val_dataset, "val", "--cached_val_dataset", expected, max_length));

  if (options.streaming) {
    StreamingOptions streaming;
    streaming.max_length = max_length;
    streaming.truncation = options.truncation;
    streaming.batch_size = global_batch;
    streaming.seed = options.data_seed;
    streaming.shuffle_buffer_size = options.shuffle_buffer_size;
    auto stream = std::make_unique<RowStream>(options.datasets, options.reading(), "--dataset");
    out.train = std::make_unique<StreamingData>(std::move(stream), encoding.chat, streaming);
    log_info("train data: streamed from --dataset (shuffle buffer ", std::max<int64_t>(1, streaming.shuffle_buffer_size),
             " rows), encoded as drawn");
    return out;
  }
  if (options.lazy_tokenize) {
    SWIFT_CHECK(!rows.empty(), DataError, "--dataset has no rows", "check the files");
    log_info("train data: ", rows.size(), " rows, encoded as their batch is drawn (--lazy_tokenize)");
    out.train = std::make_unique<LazyData>(std::move(rows), encoding.chat, max_length, options.truncation, global_batch,
                                           options.data_seed);
    return out;
  }
  std::vector<Example> examples;
  if (!rows.empty()) {
    EncodeReport report;
    examples = encode_rows(rows, encoding.chat, max_length, options.truncation, report, "--dataset", options.num_proc);
    log_info("train data: ", report.summary());
  }
  if (!options.cached_dataset.empty()) {
    auto more = read_cached(options.cached_dataset, "train", "--cached_dataset", expected, max_length);
    if (options.datasets.empty()) {  // --split_dataset_ratio then holds out cached examples
      auto held_out = split_off_validation(more, options.split_dataset_ratio, options.data_seed);
      if (!held_out.empty()) log_info("--split_dataset_ratio: ", held_out.size(), " cached examples held out for validation");
      append(out.val, std::move(held_out));
    }
    append(examples, std::move(more));
  }
  SWIFT_CHECK(!examples.empty(), DataError, "no training example is left", "check --dataset / --cached_dataset and --max_length");
  if (options.packing) {
    const int64_t packing_length = options.packing_length > 0 ? options.packing_length : max_length;
    const size_t samples = examples.size();
    examples = pack_examples(examples, packing_length);
    log_info("packing: packed ", samples, " samples into ", examples.size(), " rows of at most ", packing_length, " tokens");
    if (!out.val.empty()) {
      const size_t val_samples = out.val.size();
      out.val = pack_examples(out.val, packing_length);
      log_info("packing: packed ", val_samples, " validation samples into ", out.val.size(), " rows");
    }
  }
  for (const auto& e : examples) out.longest_example = std::max<int64_t>(out.longest_example, e.input_ids.size());
  out.train = std::make_unique<InMemoryData>(std::move(examples), global_batch, options.data_seed);
  return out;
}

}  // namespace swift::data
