// Everything a training job draws examples from, built from DataOptions: the training examples behind TrainData
// (encoded up front, read from --cached_dataset, encoded as drawn with --lazy_tokenize, or streamed with
// --streaming; packed with --packing) and the validation examples (always encoded up front).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "swift/data/data_options.h"
#include "swift/data/example.h"
#include "swift/data/train_data.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"

namespace swift::data {

// Prepares the loaded, normalised rows (training, then validation; `what` names them for errors) before they are
// encoded (KTO pairs each reply with another row's for its KL term). Not called for --streaming.
using RowPreparation = std::function<void(std::vector<nlohmann::json>& rows, uint64_t data_seed, const std::string& what)>;

struct TrainingData {
  std::unique_ptr<TrainData> train;  // where the loop draws micro-batches from
  std::vector<Example> val;
  int64_t longest_example = 0;  // tokens of the longest training row when encoded up front (0: not known)
};

// What the examples are encoded with.
struct Encoding {
  const templates::Template& chat;
  std::string template_name;             // for a cache's identity ("" for plain text)
  const tokenizer::Tokenizer& tokenizer;  // likewise
  int64_t max_length = 0;                // --max_length resolved against the model
};

// `global_batch`: samples per global micro-batch (per-device batch x data-parallel ranks): every rank draws the
// same sequence and trains on its slice. `prepare_rows` may be empty.
TrainingData load_training_data(const DataOptions& options, const Encoding& encoding, int64_t global_batch,
                                const RowPreparation& prepare_rows);

}  // namespace swift::data
