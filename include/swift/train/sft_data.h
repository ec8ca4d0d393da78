// Training examples: dataset rows encoded by the chat template into input_ids + labels, truncated to
// --max_length, split for validation, and served in seeded shuffled batches whose position can be saved.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace swift::templates {
class Template;
}

namespace swift::train {

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

// --packing: bin-packs examples into rows of at most packing_length tokens by first-fit-decreasing (stable on
// ties, so deterministic). Each row carries position_ids that restart at 0 per sample and segments (the sample's
// index in the row); the first label of each sample is forced to -100 so no loss crosses samples. Examples longer
// than packing_length get a row of their own. Every label token of the input is kept.
std::vector<Example> pack_examples(const std::vector<Example>& examples, int64_t packing_length);

// One padded micro-batch. input_ids, labels, attention_mask: [B, T] (right-padded; labels -100 on pads).
struct Batch {
  at::Tensor input_ids, labels, attention_mask;
  // [B, T] int64, defined only for packed rows: position ids (0 on pads) and segment ids (-1 on pads).
  at::Tensor position_ids, segment_ids;
  int64_t label_tokens = 0;  // tokens that carry loss (after the shift: labels[:, 1:] != -100)
  at::Tensor margins;        // [B] float, collate_pairs only, when a row has a "margin" (0 for those that do not)
  at::Tensor desirable;      // [B] bool, collate_pairs of labelled replies only
};
Batch collate(const std::vector<const Example*>& examples, int64_t pad_id);
// A micro-batch of preference pairs as ms-swift batches them: the B chosen rows, then the B rejected rows (for
// labelled replies: the B replies, then their B KL rows), padded together ([2B, T]), so one forward pass can score
// both. attention_mask is set (1 real, 0 pad); `desirable` ([B] bool) for labelled replies.
Batch collate_pairs(const std::vector<const Example*>& examples, int64_t pad_id);
// Labelled replies alone (KTO without KL rows): collate() plus `desirable`.
Batch collate_labelled(const std::vector<const Example*>& examples, int64_t pad_id);

// Epochs of seeded shuffles over a dataset; the position (epoch, index) is all resume needs.
class BatchSampler {
 public:
  BatchSampler(size_t dataset_size, int64_t batch_size, uint64_t seed, bool shuffle = true);
  // The next micro-batch's example indices; wraps into the next epoch (a short last batch ends each epoch).
  std::vector<size_t> next();
  int64_t epoch() const { return epoch_; }
  size_t position() const { return position_; }
  void set_position(int64_t epoch, size_t position);
  int64_t batches_per_epoch() const;

 private:
  void reshuffle();
  size_t size_;
  int64_t batch_size_;
  uint64_t seed_;
  bool shuffle_;
  int64_t epoch_ = 0;
  size_t position_ = 0;
  std::vector<size_t> order_;
};

}  // namespace swift::train
