// Training examples: dataset rows encoded by the chat template into input_ids + labels and truncated to
// --max_length (what every way of feeding the trainer, in memory, lazy or streamed, goes through).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace swift::templates {
class Template;
}

namespace swift::data {

struct Example {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> labels;  // -100 where no loss
  // Packed rows only (pack_examples): per-token position ids (restarting at 0 for each sample) and the
  // sample's index within the row. Empty for a plain example.
  std::vector<int64_t> position_ids;
  std::vector<int64_t> segments;
  // swift rlhf's second sequence, encoded and truncated as input_ids/labels are (each on its own, as ms-swift):
  // a pair's rejected conversation, or a labelled reply's KL conversation (its prompt with another row's reply,
  // KTO). Empty otherwise.
  std::vector<int64_t> rejected_input_ids = {}, rejected_labels = {};
  std::optional<double> margin = std::nullopt;    // the row's "margin" column (reward modelling)
  std::optional<bool> desirable = std::nullopt;   // a labelled reply's "label" (KTO)
  // GRPO. A prompt row: its columns ("solution", ...), which reward functions read, with "messages" the prompt's
  // conversation.
  std::shared_ptr<const nlohmann::json> columns = nullptr;
  // A completion generated for it (input_ids: the prompt and the completion, labels on the completion): its
  // advantage, its tokens' log-probabilities when it was generated (one per position after the first, as
  // input_ids[1:]; empty: on-policy, the policy's own), its share of the loss normaliser, and whether it reached
  // --max_completion_length.
  std::optional<double> advantage = std::nullopt;
  std::vector<float> old_logps = {};
  double loss_units = 1.0;
  bool truncated = false;
  int64_t rollout_round = -1;  // the generation batch it came from
};

enum class Truncation { kDelete, kLeft, kRight };
// "delete" | "left" | "right"; UsageError naming --truncation_strategy otherwise.
Truncation parse_truncation(const std::string& name);

struct EncodeReport {
  size_t rows = 0, kept = 0, truncated = 0, deleted_too_long = 0, deleted_no_loss = 0;
  std::string summary() const;  // one line for the log
};

// What became of one row.
enum class RowFate { kKept, kTruncated, kTooLong, kNoLoss };

// Encodes one normalised row (a "messages" column) with `chat` and applies --max_length / --truncation_strategy.
// `example` is filled for kKept and kTruncated only. DataError naming `where` when the template cannot encode it.
// With chat.options().row_kind a preference pair, "rejected_messages" too (DataError when the row has none); a
// labelled reply, its "label" (true/false; anything else is a DataError) and "kl_messages" when present. The
// row's fate is the worse of its two sequences'.
// encode_rows, lazy tokenisation and streaming all go through here, so they agree token for token.
RowFate encode_row(const nlohmann::json& row, const templates::Template& chat, int64_t max_length, Truncation truncation,
                   Example& example, const std::string& where);
// Adds one row's fate to the counts.
void count_fate(EncodeReport& report, RowFate fate);

// Encodes normalised rows (data::load_datasets) with `chat`. Rows longer than max_length (0 = no limit) are
// deleted or truncated; rows left without any loss token are dropped (they would train nothing). DataError
// naming the row for a conversation the template cannot encode; DataError when nothing is left.
// num_threads (--dataset_num_proc) encodes in parallel; the result does not depend on it.
std::vector<Example> encode_rows(const std::vector<nlohmann::json>& rows, const templates::Template& chat,
                                 int64_t max_length, Truncation truncation, EncodeReport& report,
                                 const std::string& what = "--dataset", int num_threads = 1);

}  // namespace swift::data
