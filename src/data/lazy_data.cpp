// --lazy_tokenize: encode each row when its micro-batch is drawn, replacing rows that turn out unusable.
#include "swift/data/lazy_data.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>

#include "swift/core/error.h"
#include "swift/core/logging.h"

namespace swift::data {

namespace {
constexpr size_t kTries = 10;  // as ms-swift's LazyLLMDataset n_try_fetch
constexpr size_t kLoggedDrops = 10;
}  // namespace

LazyData::LazyData(std::vector<nlohmann::json> rows, const templates::Template& chat, int64_t max_length,
                   Truncation truncation, int64_t batch_size, uint64_t seed, std::string what)
    : rows_(std::move(rows)),
      chat_(chat),
      max_length_(max_length),
      truncation_(truncation),
      what_(std::move(what)),
      sampler_(rows_.size(), batch_size, seed),
      fallback_(rows_.size()),
      fallback_index_(rows_.size()),
      dropped_(rows_.size(), 0) {
  std::iota(fallback_.begin(), fallback_.end(), size_t{0});
  std::mt19937_64 rng(seed ^ 0x6c617a79ULL);  // independent of the batch order
  std::shuffle(fallback_.begin(), fallback_.end(), rng);
  for (size_t k = 0; k < fallback_.size(); ++k) fallback_index_[fallback_[k]] = k;
}

Example LazyData::encode_or_replace(size_t i) {
  // The candidates for row i are i, then the rows after it in the fallback permutation: a function of i alone,
  // so a resumed run draws the same replacements.
  const size_t tries = std::min(kTries, rows_.size());
  for (size_t t = 0; t < tries; ++t) {
    const size_t row = t == 0 ? i : fallback_[(fallback_index_[i] + t) % fallback_.size()];
    if (dropped_[row]) continue;
    Example e;
    const RowFate fate = encode_row(rows_[row], chat_, max_length_, truncation_, e, what_ + " row " + std::to_string(row + 1));
    if (fate == RowFate::kKept || fate == RowFate::kTruncated) {
      if (t > 0) ++replaced_;
      return e;
    }
    dropped_[row] = fate == RowFate::kTooLong ? 1 : 2;
    (fate == RowFate::kTooLong ? too_long_ : no_loss_) += 1;
    if (too_long_ + no_loss_ <= kLoggedDrops)
      log_warn("lazy_tokenize: ", what_, " row ", row + 1,
               fate == RowFate::kTooLong ? " is longer than --max_length" : " has no token to learn",
               "; another row is drawn in its place (as ms-swift)",
               too_long_ + no_loss_ == kLoggedDrops ? " (further drops are only counted)" : "");
  }
  throw DataError(what_ + " row " + std::to_string(i + 1) + " and " + std::to_string(tries - 1) +
                      " replacement rows are all unusable (" + report() + ")",
                  "raise --max_length, use --truncation_strategy left|right, or check the rows have assistant replies");
}

std::vector<const Example*> LazyData::next_micro_batch() {
  current_.clear();
  for (size_t i : sampler_.next()) current_.push_back(encode_or_replace(i));
  std::vector<const Example*> out;
  for (const auto& e : current_) out.push_back(&e);
  return out;
}

nlohmann::json LazyData::state() const {
  return {{"kind", "lazy"}, {"epoch", sampler_.epoch()}, {"position", sampler_.position()}};
}

void LazyData::restore(const nlohmann::json& state) {
  SWIFT_CHECK(state.value("kind", "") == "lazy", DataError,
              "the checkpoint's data position is for " + state.value("kind", std::string("?")) + " data, not --lazy_tokenize",
              "resume with the data flags of the run that wrote it, or pass --ignore_data_skip true");
  const auto position = state.at("position").get<size_t>();
  SWIFT_CHECK(position <= rows_.size(), DataError,
              "the checkpoint's data position " + std::to_string(position) + " is past the " +
                  std::to_string(rows_.size()) + " rows",
              "resume with the same --dataset, or pass --ignore_data_skip true");
  sampler_.set_position(state.at("epoch").get<int64_t>(), position);
}

std::string LazyData::report() const {
  if (too_long_ + no_loss_ == 0) return {};
  std::ostringstream s;
  s << "lazy_tokenize dropped " << too_long_ + no_loss_ << " rows while training";
  if (too_long_) s << " (" << too_long_ << " longer than --max_length";
  if (no_loss_) s << (too_long_ ? ", " : " (") << no_loss_ << " with no token to learn";
  s << "); " << replaced_ << " draws took a replacement row";
  return s.str();
}

}  // namespace swift::data
