// Pre-tokenizers with Hugging Face tokenizers' semantics (tokenizers/src/pre_tokenizers/*.rs and
// NormalizedString::split for the delimiter behaviours).
#include "swift/tokenizer/pre_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>

#include "json_util.h"
#include "swift/tokenizer/regex.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {
namespace {

using detail::json;

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct Match {
  Span span;
  bool is_match;
};

// Regex/literal matches -> the covering list of (span, is_match), as tokenizers' Pattern::find_matches.
void cover(std::string_view text, const std::vector<Span>& found, bool invert, std::vector<Match>& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({{0, 0}, invert});
    return;
  }
  uint32_t prev = 0;
  for (const Span& m : found) {
    if (prev != m.first) out.push_back({{prev, m.first}, invert});
    out.push_back({m, !invert});
    prev = m.second;
  }
  if (prev != text.size()) out.push_back({{prev, uint32_t(text.size())}, invert});
}

// Character-predicate matches: every matching character is a match of its own.
template <typename Pred>
void cover_chars(std::string_view text, Pred&& pred, std::vector<Match>& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({{0, 0}, false});
    return;
  }
  uint32_t last = 0;
  for (size_t i = 0; i < text.size();) {
    size_t start = i;
    uint32_t cp = next_code_point(text, i);
    if (pred(cp)) {
      if (last < start) out.push_back({{last, uint32_t(start)}, false});
      out.push_back({{uint32_t(start), uint32_t(i)}, true});
      last = uint32_t(i);
    }
  }
  if (last < text.size()) out.push_back({{last, uint32_t(text.size())}, false});
}

// Applies the delimiter behaviour and appends the resulting non-empty pieces of `piece` to `out`.
// `splits` is rewritten in place into (span, remove) pairs, as in NormalizedString::split.
void emit_splits(const Piece& piece, std::vector<Match>& splits, Behavior behavior, std::vector<Piece>& out) {
  std::vector<Match> merged;
  switch (behavior) {
    case Behavior::kIsolated:
      for (auto& m : splits) m.is_match = false;
      break;
    case Behavior::kRemoved:
      break;
    case Behavior::kContiguous: {
      bool previous = false;
      for (const auto& m : splits) {
        if (m.is_match == previous && !merged.empty()) {
          merged.back().span.second = m.span.second;
        } else {
          merged.push_back({m.span, false});
        }
        previous = m.is_match;
      }
      splits.swap(merged);
      break;
    }
    case Behavior::kMergedWithPrevious: {
      bool previous = false;
      for (const auto& m : splits) {
        if (m.is_match && !previous && !merged.empty()) {
          merged.back().span.second = m.span.second;
        } else {
          merged.push_back({m.span, false});
        }
        previous = m.is_match;
      }
      splits.swap(merged);
      break;
    }
    case Behavior::kMergedWithNext: {
      bool previous = false;
      for (auto it = splits.rbegin(); it != splits.rend(); ++it) {
        if (it->is_match && !previous && !merged.empty()) {
          merged.back().span.first = it->span.first;
        } else {
          merged.push_back({it->span, false});
        }
        previous = it->is_match;
      }
      splits.assign(merged.rbegin(), merged.rend());
      break;
    }
  }
  for (const auto& m : splits) {
    if (m.is_match || m.span.first == m.span.second) continue;  // removed, or empty
    Piece p;
    p.text = piece.text.substr(m.span.first, m.span.second - m.span.first);
    p.origin_len = piece.origin_len > m.span.first ? std::min(piece.origin_len - m.span.first, uint32_t(p.text.size())) : 0;
    out.push_back(std::move(p));
  }
}

// Runs fn(piece, out) on every piece without an id, keeping the others in place.
template <typename Fn>
void split_each(std::vector<Piece>& pieces, Fn&& fn) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 4);
  for (auto& p : pieces) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
    } else {
      fn(p, out);
    }
  }
  pieces.swap(out);
}

Behavior behavior_from_json(const json& j, const std::string& where) {
  std::string b = detail::get_string(j, "behavior", where);
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  detail::fail(where + ".behavior", "unknown delimiter behaviour '" + b + "'",
               "expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
}

class Split final : public PreTokenizer {
 public:
  Split(Pattern pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Span> found;
    std::vector<Match> matches;
    split_each(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      found.clear();
      pattern_.find_all(p.text, found);
      cover(p.text, found, invert_, matches);
      emit_splits(p, matches, behavior_, out);
    });
  }
  const Pattern* isolated_pattern() const override {
    return behavior_ == Behavior::kIsolated && !invert_ ? &pattern_ : nullptr;
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

// The GPT-2 byte alphabet (tokenizers' bytes_char).
struct ByteAlphabet {
  std::array<std::array<char, 3>, 256> utf8{};  // [0] = length, then the bytes
  std::array<int16_t, 0x144> unmap{};
  ByteAlphabet() {
    unmap.fill(-1);
    std::array<bool, 256> direct{};
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      uint32_t cp = direct[b] ? uint32_t(b) : uint32_t(256 + n++);
      std::string s = utf8_encode(cp);
      utf8[b][0] = char(s.size());
      for (size_t k = 0; k < s.size(); ++k) utf8[b][k + 1] = s[k];
      unmap[cp] = int16_t(b);
    }
  }
};

const ByteAlphabet& byte_alphabet() {
  static const ByteAlphabet alphabet;
  return alphabet;
}

constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Pattern>(Pattern::regex(kGpt2Pattern));
  }
  bool regex_byte_level_plan(RegexByteLevelPlan* plan) const override {
    if (!regex_) return false;
    plan->split = regex_.get();
    plan->add_prefix_space = add_prefix_space_;
    return true;
  }
  bool is_plain_byte_mapping() const override { return !regex_ && !add_prefix_space_; }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Span> found;
    std::vector<Match> matches;
    std::vector<Piece> splits;
    split_each(pieces, [&](Piece& p, std::vector<Piece>& out) {
      if (add_prefix_space_ && !p.text.empty() && p.text[0] != ' ') {
        p.text.insert(p.text.begin(), ' ');
        if (p.origin_len) ++p.origin_len;
      }
      splits.clear();
      if (regex_) {
        found.clear();
        regex_->find_all(p.text, found);
        cover(p.text, found, false, matches);
        emit_splits(p, matches, Behavior::kIsolated, splits);
      } else {
        splits.push_back(std::move(p));
      }
      for (auto& s : splits) {
        Piece mapped;
        size_t origin = std::min<size_t>(s.origin_len, s.text.size());
        byte_level_map(std::string_view(s.text).substr(0, origin), mapped.text);
        mapped.origin_len = uint32_t(mapped.text.size());
        byte_level_map(std::string_view(s.text).substr(origin), mapped.text);
        out.push_back(std::move(mapped));
      }
    });
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Pattern> regex_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Match> matches;
    split_each(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      cover_chars(p.text, is_numeric, matches);
      emit_splits(p, matches, individual_ ? Behavior::kIsolated : Behavior::kContiguous, out);
    });
  }

 private:
  bool individual_;
};

enum class PrependScheme { kFirst, kNever, kAlways };

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {
    size_t i = 0;
    replacement_cp_ = next_code_point(replacement_, i);
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Match> matches;
    split_each(pieces, [&](Piece& p, std::vector<Piece>& out) {
      std::string text;
      text.reserve(p.text.size() + 8);
      uint32_t origin = 0;
      for (size_t i = 0; i < p.text.size(); ++i) {
        if (p.text[i] == ' ') {
          text += replacement_;
        } else {
          text.push_back(p.text[i]);
        }
        if (i + 1 == p.origin_len) origin = uint32_t(text.size());
      }
      p.text.swap(text);
      p.origin_len = origin;
      bool starts = p.text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.origin_len))) {
        p.text.insert(0, replacement_);
        if (p.origin_len) p.origin_len += uint32_t(replacement_.size());
      }
      if (!split_) {
        out.push_back(std::move(p));
        return;
      }
      uint32_t r = replacement_cp_;
      cover_chars(p.text, [r](uint32_t cp) { return cp == r; }, matches);
      emit_splits(p, matches, Behavior::kMergedWithNext, out);
    });
  }

 private:
  std::string replacement_;
  uint32_t replacement_cp_;
  PrependScheme scheme_;
  bool split_;
};

// Splits on characters matching a predicate with a fixed behaviour (WhitespaceSplit, CharDelimiterSplit,
// Punctuation).
template <typename Pred>
class CharSplit final : public PreTokenizer {
 public:
  CharSplit(Pred pred, Behavior behavior) : pred_(pred), behavior_(behavior) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Match> matches;
    split_each(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      cover_chars(p.text, pred_, matches);
      emit_splits(p, matches, behavior_, out);
    });
  }

 private:
  Pred pred_;
  Behavior behavior_;
};

template <typename Pred>
std::unique_ptr<PreTokenizer> make_char_split(Pred pred, Behavior behavior) {
  return std::make_unique<CharSplit<Pred>>(pred, behavior);
}

bool is_punctuation(uint32_t cp) {
  if (cp < 0x80) return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
                        (cp >= 0x7B && cp <= 0x7E);
  switch (utf8proc_category(utf8proc_int32_t(cp))) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& s : steps_) s->pre_tokenize(pieces);
  }
  bool regex_byte_level_plan(RegexByteLevelPlan* plan) const override {
    if (steps_.size() == 1) return steps_[0]->regex_byte_level_plan(plan);
    if (steps_.size() != 2 || !steps_[0]->isolated_pattern() || !steps_[1]->is_plain_byte_mapping()) return false;
    plan->split = steps_[0]->isolated_pattern();
    plan->add_prefix_space = false;
    return true;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

void byte_level_map(std::string_view in, std::string& out) {
  const auto& table = byte_alphabet().utf8;
  for (unsigned char b : in) {
    const auto& e = table[b];
    out.append(e.data() + 1, size_t(e[0]));
  }
}

int byte_level_unmap(uint32_t cp) { return cp < 0x144 ? byte_alphabet().unmap[cp] : -1; }

std::unique_ptr<PreTokenizer> PreTokenizer::from_json(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = detail::type_of(j, where);
  if (type == "Split") {
    return std::make_unique<Split>(pattern_from_json(detail::required(j, "pattern", where), where + ".pattern"),
                                   behavior_from_json(j, where), detail::get_bool(j, "invert", false, where));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(detail::get_bool(j, "add_prefix_space", true, where),
                                       detail::get_bool(j, "use_regex", true, where));
  }
  if (type == "Digits") return std::make_unique<Digits>(detail::get_bool(j, "individual_digits", false, where));
  if (type == "Metaspace") {
    std::string replacement = detail::get_char(j, "replacement", where);
    PrependScheme scheme = PrependScheme::kAlways;
    if (auto s = detail::get_opt_string(j, "prepend_scheme", where)) {
      if (*s == "first") {
        scheme = PrependScheme::kFirst;
      } else if (*s == "never") {
        scheme = PrependScheme::kNever;
      } else if (*s == "always") {
        scheme = PrependScheme::kAlways;
      } else {
        detail::fail(where + ".prepend_scheme", "unknown value '" + *s + "'", "expected first, always or never");
      }
    }
    auto add_prefix = j.find("add_prefix_space");
    if (add_prefix != j.end() && add_prefix->is_boolean() && !add_prefix->get<bool>()) {
      if (scheme != PrependScheme::kNever && j.contains("prepend_scheme")) {
        detail::fail(where, "add_prefix_space does not match declared prepend_scheme");
      }
      scheme = PrependScheme::kNever;
    }
    return std::make_unique<Metaspace>(replacement, scheme, detail::get_bool(j, "split", true, where));
  }
  if (type == "Whitespace") {
    // tokenizers: \w+|[^\w\s]+ with its Rust regex \w; PCRE2's UCP \w differs for combining marks.
    return std::make_unique<Split>(Pattern::regex(R"(\w+|[^\w\s]+)"), Behavior::kRemoved, true);
  }
  if (type == "WhitespaceSplit") return make_char_split(is_white_space, Behavior::kRemoved);
  if (type == "CharDelimiterSplit") {
    std::string d = detail::get_char(j, "delimiter", where);
    size_t i = 0;
    uint32_t cp = next_code_point(d, i);
    return make_char_split([cp](uint32_t c) { return c == cp; }, Behavior::kRemoved);
  }
  if (type == "Punctuation") {
    Behavior b = j.contains("behavior") ? behavior_from_json(j, where) : Behavior::kIsolated;
    return make_char_split(is_punctuation, b);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(make_char_split(is_white_space, Behavior::kRemoved));
    steps.push_back(make_char_split(is_punctuation, Behavior::kIsolated));
    return std::make_unique<Sequence>(std::move(steps));
  }
  if (type == "Sequence") {
    const json& list = detail::required(j, "pretokenizers", where);
    if (!list.is_array()) detail::fail(where + ".pretokenizers", "expected a list");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = from_json(list[i], where + ".pretokenizers[" + std::to_string(i) + "]");
      if (p) steps.push_back(std::move(p));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  detail::fail(where, "unsupported pre-tokenizer type '" + type + "'",
               "supported: Split, ByteLevel, Digits, Metaspace, Whitespace, WhitespaceSplit, CharDelimiterSplit, "
               "Punctuation, BertPreTokenizer, Sequence");
}

std::vector<std::string> pre_tokenize_string(const PreTokenizer& p, std::string text) {
  std::vector<Piece> pieces;
  if (!text.empty()) {
    Piece piece;
    piece.origin_len = uint32_t(utf8_len(static_cast<unsigned char>(text[0])));
    piece.text = std::move(text);
    pieces.push_back(std::move(piece));
  }
  p.pre_tokenize(pieces);
  std::vector<std::string> out;
  for (auto& piece : pieces) out.push_back(std::move(piece.text));
  return out;
}

}  // namespace swift::tokenizer
