// Encoding, truncation, collation and batch order for supervised training.
#include "swift/train/sft_data.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>

#include "swift/core/error.h"
#include "swift/template/message.h"
#include "swift/template/template.h"

namespace swift::train {

Truncation parse_truncation(const std::string& name) {
  if (name == "delete") return Truncation::kDelete;
  if (name == "left") return Truncation::kLeft;
  if (name == "right") return Truncation::kRight;
  throw UsageError("--truncation_strategy '" + name + "' is not known", "use delete, left or right");
}

std::string EncodeReport::summary() const {
  std::ostringstream s;
  s << rows << " rows: " << kept << " kept";
  if (truncated) s << ", " << truncated << " truncated to --max_length";
  if (deleted_too_long) s << ", " << deleted_too_long << " deleted as longer than --max_length";
  if (deleted_no_loss) s << ", " << deleted_no_loss << " dropped with no token to learn";
  return s.str();
}

namespace {
bool has_loss(const std::vector<int64_t>& labels) {
  // The first label can never be predicted (nothing precedes it).
  return std::any_of(labels.begin() + (labels.empty() ? 0 : 1), labels.end(), [](int64_t l) { return l != -100; });
}
}  // namespace

namespace {

// --max_length / --truncation_strategy on one encoded sequence.
RowFate truncate(std::vector<int64_t>& ids, std::vector<int64_t>& labels, int64_t max_length, Truncation truncation) {
  if (max_length <= 0 || static_cast<int64_t>(ids.size()) <= max_length) return RowFate::kKept;
  const auto n = static_cast<size_t>(max_length);
  if (truncation == Truncation::kDelete) return RowFate::kTooLong;
  if (truncation == Truncation::kRight) {
    ids.resize(n);
    labels.resize(n);
  } else {
    ids.erase(ids.begin(), ids.end() - static_cast<long>(n));
    labels.erase(labels.begin(), labels.end() - static_cast<long>(n));
  }
  return RowFate::kTruncated;
}

}  // namespace

RowFate encode_row(const nlohmann::json& row, const templates::Template& chat, int64_t max_length, Truncation truncation,
                   Example& example, const std::string& where) {
  auto enc = with_context(where, [&] { return chat.encode(templates::conversation_from_json(row.at("messages"))); });
  Example e;
  e.input_ids = std::move(enc.input_ids);
  e.labels = std::move(enc.labels);
  RowFate fate = truncate(e.input_ids, e.labels, max_length, truncation);
  if (fate == RowFate::kTooLong) return fate;
  if (!has_loss(e.labels)) return RowFate::kNoLoss;
  using RowKind = templates::TemplateOptions::RowKind;
  const RowKind kind = chat.options().row_kind;
  if (kind == RowKind::kLabelledReply) {
    const nlohmann::json* label = row.contains("label") ? &row["label"] : nullptr;
    SWIFT_CHECK(label && (label->is_boolean() || (label->is_number_integer() && (*label == 0 || *label == 1))),
                DataError,
                where + ": a KTO row needs \"label\": true (a desirable reply) or false (an undesirable one)" +
                    (label ? ", got " + label->dump() : std::string()),
                "write the label as a JSON boolean, not a string");
    e.desirable = label->is_boolean() ? label->get<bool>() : label->get<int>() == 1;
  }
  const char* second = kind == RowKind::kPreferencePair ? "rejected_messages"
                       : kind == RowKind::kLabelledReply ? "kl_messages"
                                                         : nullptr;
  if (second) {
    SWIFT_CHECK(kind != RowKind::kPreferencePair || row.contains(second), DataError,
                where + ": a preference row needs a rejected reply",
                "give \"rejected_response\" (or \"rejected_messages\") next to \"messages\", or "
                "\"prompt\"/\"chosen\"/\"rejected\" columns (docs/rlhf.md)");
  }
  if (second && row.contains(second)) {
    auto other = with_context(where + (kind == RowKind::kPreferencePair ? " (rejected)" : " (KL reply)"), [&] {
      return chat.encode(templates::conversation_from_json(row.at(second)));
    });
    e.rejected_input_ids = std::move(other.input_ids);
    e.rejected_labels = std::move(other.labels);
    const RowFate side = truncate(e.rejected_input_ids, e.rejected_labels, max_length, truncation);
    if (side == RowFate::kTooLong) return side;
    if (!has_loss(e.rejected_labels)) return RowFate::kNoLoss;
    if (side == RowFate::kTruncated) fate = side;
  }
  if (kind == RowKind::kPreferencePair && row.contains("margin") && !row["margin"].is_null()) {
    SWIFT_CHECK(row["margin"].is_number(), DataError, where + ": \"margin\" must be a number",
                "e.g. \"margin\": 0.5 (how much more the chosen reply is preferred)");
    e.margin = row["margin"].get<double>();
  }
  example = std::move(e);
  return fate;
}

void count_fate(EncodeReport& report, RowFate fate) {
  ++report.rows;
  switch (fate) {
    case RowFate::kTooLong: ++report.deleted_too_long; return;
    case RowFate::kNoLoss: ++report.deleted_no_loss; return;
    case RowFate::kTruncated: ++report.truncated; break;
    case RowFate::kKept: break;
  }
  ++report.kept;
}

std::vector<Example> encode_rows(const std::vector<nlohmann::json>& rows, const templates::Template& chat,
                                 int64_t max_length, Truncation truncation, EncodeReport& report,
                                 const std::string& what, int num_threads) {
  // Rows are encoded in contiguous chunks, one per thread (the tokenizer and template are thread-safe); the
  // results, the report and the first error (by row order) are the same whatever the thread count.
  std::vector<Example> encoded(rows.size());
  std::vector<RowFate> fate(rows.size(), RowFate::kKept);
  std::vector<std::exception_ptr> errors(rows.size());
  auto work = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      try {
        fate[i] = encode_row(rows[i], chat, max_length, truncation, encoded[i], what + " row " + std::to_string(i + 1));
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t threads = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(num_threads, 1)), rows.size() / 64 + 1));
  std::vector<std::thread> pool;
  const size_t chunk = (rows.size() + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, std::min(rows.size(), t * chunk), std::min(rows.size(), (t + 1) * chunk));
  work(0, std::min(rows.size(), chunk));
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);

  std::vector<Example> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    count_fate(report, fate[i]);
    if (fate[i] == RowFate::kKept || fate[i] == RowFate::kTruncated) out.push_back(std::move(encoded[i]));
  }
  SWIFT_CHECK(!out.empty() || rows.empty(), DataError, what + ": no row is left to train on (" + report.summary() + ")",
              "raise --max_length, use --truncation_strategy left|right, or check the rows have assistant replies");
  return out;
}

std::vector<Example> pack_examples(const std::vector<Example>& examples, int64_t packing_length) {
  SWIFT_ASSERT(packing_length > 0, "packing_length must be positive");
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return examples[a].input_ids.size() > examples[b].input_ids.size();
  });
  std::vector<std::vector<size_t>> bins;
  std::vector<int64_t> used;
  for (size_t i : order) {
    const auto n = static_cast<int64_t>(examples[i].input_ids.size());
    size_t bin = bins.size();
    for (size_t j = 0; j < bins.size(); ++j)
      if (used[j] + n <= packing_length) {
        bin = j;
        break;
      }
    if (bin == bins.size()) {
      bins.emplace_back();
      used.push_back(0);
    }
    bins[bin].push_back(i);
    used[bin] += n;
  }
  std::vector<Example> out;
  out.reserve(bins.size());
  for (const auto& bin : bins) {
    Example row;
    for (size_t s = 0; s < bin.size(); ++s) {
      const auto& e = examples[bin[s]];
      row.input_ids.insert(row.input_ids.end(), e.input_ids.begin(), e.input_ids.end());
      const size_t start = row.labels.size();
      row.labels.insert(row.labels.end(), e.labels.begin(), e.labels.end());
      if (!e.labels.empty()) row.labels[start] = -100;  // never predicted from the previous sample
      for (size_t t = 0; t < e.input_ids.size(); ++t) {
        row.position_ids.push_back(static_cast<int64_t>(t));
        row.segments.push_back(static_cast<int64_t>(s));
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

Batch collate(const std::vector<const Example*>& examples, int64_t pad_id) {
  size_t longest = 0;
  for (const auto* e : examples) longest = std::max(longest, e->input_ids.size());
  const auto B = static_cast<int64_t>(examples.size()), T = static_cast<int64_t>(longest);
  Batch b;
  b.input_ids = at::full({B, T}, pad_id, at::kLong);
  b.labels = at::full({B, T}, -100, at::kLong);
  b.attention_mask = at::zeros({B, T}, at::kLong);
  bool packed = false;
  for (const auto* e : examples) packed = packed || !e->segments.empty();
  if (packed) {
    b.position_ids = at::zeros({B, T}, at::kLong);
    b.segment_ids = at::full({B, T}, -1, at::kLong);
  }
  // Fresh contiguous CPU tensors: each row is written straight into its slice (no temporary tensor per row),
  // and the label count comes from the vectors rather than a reduction over the batch.
  int64_t* ids = b.input_ids.data_ptr<int64_t>();
  int64_t* labels = b.labels.data_ptr<int64_t>();
  int64_t* mask = b.attention_mask.data_ptr<int64_t>();
  for (int64_t i = 0; i < B; ++i) {
    const auto& e = *examples[static_cast<size_t>(i)];
    const auto n = static_cast<int64_t>(e.input_ids.size());
    std::copy(e.input_ids.begin(), e.input_ids.end(), ids + i * T);
    std::copy(e.labels.begin(), e.labels.end(), labels + i * T);
    std::fill(mask + i * T, mask + i * T + n, int64_t{1});
    for (size_t t = 1; t < e.labels.size(); ++t) b.label_tokens += e.labels[t] != -100;  // after the shift
    if (packed) {
      int64_t* positions = b.position_ids.data_ptr<int64_t>() + i * T;
      int64_t* segments = b.segment_ids.data_ptr<int64_t>() + i * T;
      if (e.segments.empty()) {  // a plain example in a packed batch: one segment
        std::iota(positions, positions + n, int64_t{0});
        std::fill(segments, segments + n, int64_t{0});
      } else {
        std::copy(e.position_ids.begin(), e.position_ids.end(), positions);
        std::copy(e.segments.begin(), e.segments.end(), segments);
      }
    }
  }
  return b;
}

namespace {

// KTO's labels, [B] bool (false where a row has none).
at::Tensor desirable_of(const std::vector<const Example*>& examples) {
  std::vector<uint8_t> flags;
  for (const auto* e : examples) flags.push_back(e->desirable.value_or(false) ? 1 : 0);
  return at::tensor(flags, at::kByte).to(at::kBool);
}

}  // namespace

Batch collate_pairs(const std::vector<const Example*>& examples, int64_t pad_id) {
  std::vector<Example> rejected(examples.size());
  std::vector<const Example*> rows(examples.begin(), examples.end());
  std::vector<float> margins;
  bool any_margin = false;
  for (size_t i = 0; i < examples.size(); ++i) {
    SWIFT_CHECK(!examples[i]->rejected_input_ids.empty(), DataError, "a training example has no second sequence",
                "swift rlhf trains on preference pairs (rows with \"rejected_response\" or \"rejected_messages\") "
                "or, for kto, labelled replies");
    rejected[i].input_ids = examples[i]->rejected_input_ids;
    rejected[i].labels = examples[i]->rejected_labels;
    margins.push_back(static_cast<float>(examples[i]->margin.value_or(0.0)));  // none counts 0, as ms-swift's collator
    any_margin = any_margin || examples[i]->margin.has_value();
  }
  for (const auto& r : rejected) rows.push_back(&r);
  Batch b = collate(rows, pad_id);
  if (examples.front()->desirable) b.desirable = desirable_of(examples);
  if (any_margin) b.margins = at::tensor(margins, at::kFloat);
  return b;
}

Batch collate_labelled(const std::vector<const Example*>& examples, int64_t pad_id) {
  Batch b = collate(examples, pad_id);
  b.desirable = desirable_of(examples);
  return b;
}

BatchSampler::BatchSampler(size_t dataset_size, int64_t batch_size, uint64_t seed, bool shuffle)
    : size_(dataset_size), batch_size_(std::max<int64_t>(1, batch_size)), seed_(seed), shuffle_(shuffle) {
  SWIFT_ASSERT(dataset_size > 0, "BatchSampler over an empty dataset");
  reshuffle();
}

void BatchSampler::reshuffle() {
  order_.resize(size_);
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) {
    // Each epoch's order depends only on (seed, epoch): resuming at any epoch reproduces it.
    std::mt19937_64 rng(seed_ * 1000003ULL + static_cast<uint64_t>(epoch_));
    std::shuffle(order_.begin(), order_.end(), rng);
  }
}

std::vector<size_t> BatchSampler::next() {
  if (position_ >= size_) {
    ++epoch_;
    position_ = 0;
    reshuffle();
  }
  const size_t end = std::min(size_, position_ + static_cast<size_t>(batch_size_));
  std::vector<size_t> out(order_.begin() + static_cast<long>(position_), order_.begin() + static_cast<long>(end));
  position_ = end;
  return out;
}

void BatchSampler::set_position(int64_t epoch, size_t position) {
  epoch_ = epoch;
  position_ = position;
  reshuffle();
}

int64_t BatchSampler::batches_per_epoch() const {
  return static_cast<int64_t>((size_ + static_cast<size_t>(batch_size_) - 1) / static_cast<size_t>(batch_size_));
}

}  // namespace swift::train
