// Decoders with Hugging Face tokenizers' semantics (tokenizers/src/decoders/*.rs, the ByteLevel and Metaspace
// decoders in pre_tokenizers/, Replace in normalizers/replace.rs).
#include "swift/tokenizer/decoder.h"

#include "json_util.h"
#include "swift/tokenizer/pre_tokenizer.h"
#include "swift/tokenizer/regex.h"
#include "swift/tokenizer/unicode.h"

namespace swift::tokenizer {
namespace {

using detail::json;

// ByteLevel: maps every character back to its byte (a token with a character outside the alphabet keeps its
// UTF-8 bytes), then decodes all bytes at once, invalid sequences becoming U+FFFD.
class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      size_t mark = bytes.size();
      bool ok = true;
      for (size_t i = 0; i < t.size();) {
        int b = byte_level_unmap(next_code_point(t, i));
        if (b < 0) {
          ok = false;
          break;
        }
        bytes.push_back(char(b));
      }
      if (!ok) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

}  // namespace

bool parse_byte_token(const std::string& t, unsigned char* byte) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  int v = 0;
  for (int k = 3; k < 5; ++k) {
    char c = t[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v * 16 + d;
  }
  *byte = static_cast<unsigned char>(v);
  return true;
}

namespace {

// ByteFallback: runs of <0xXX> tokens become their UTF-8 text, or one U+FFFD per byte token when invalid.
class ByteFallbackDecoder final : public Decoder {
 public:
  bool joins_byte_tokens() const override { return true; }
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (is_valid_utf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementUtf8);
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      unsigned char b;
      if (parse_byte_token(t, &b)) {
        pending.push_back(char(b));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens.swap(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

// Strip: removes up to `start` leading and `stop` trailing copies of `content` from each token.
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    const size_t w = content_.size();
    for (std::string& t : tokens) {
      size_t begin = 0, end = t.size();
      for (size_t k = 0; k < start_ && begin + w <= end && t.compare(begin, w, content_) == 0; ++k) begin += w;
      for (size_t k = 0; k < stop_ && end >= begin + w && t.compare(end - w, w, content_) == 0; ++k) end -= w;
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<Span> found;
    for (std::string& t : tokens) {
      found.clear();
      pattern_.find_all(t, found);
      if (found.empty()) continue;
      std::string out;
      size_t last = 0;
      for (const Span& m : found) {
        out.append(t, last, m.first - last);
        out += content_;
        last = m.second;
      }
      out.append(t, last, std::string::npos);
      t.swap(out);
    }
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// Metaspace: the replacement character becomes a space, except in the first token (unless prepend_scheme is
// never), where it is dropped.
class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool drop_in_first)
      : replacement_(std::move(replacement)), drop_in_first_(drop_in_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (t.find(replacement_) == std::string::npos) continue;
      std::string out;
      for (size_t p = 0; p < t.size();) {
        if (t.compare(p, replacement_.size(), replacement_) == 0) {
          if (i != 0 || !drop_in_first_) out.push_back(' ');
          p += replacement_.size();
        } else {
          out.push_back(t[p++]);
        }
      }
      t.swap(out);
    }
  }

 private:
  std::string replacement_;
  bool drop_in_first_;
};

// BPEDecoder: the end-of-word suffix becomes a space (none after the last token).
class BpeDecoder final : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      std::string out;
      for (size_t p = 0; p < t.size();) {
        if (!suffix_.empty() && t.compare(p, suffix_.size(), suffix_) == 0) {
          if (i + 1 != tokens.size()) out.push_back(' ');
          p += suffix_.size();
        } else {
          out.push_back(t[p++]);
        }
      }
      t.swap(out);
    }
  }

 private:
  std::string suffix_;
};

// WordPiece: strips the continuation prefix, puts a space before other tokens, optional cleanup.
class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, " ");
        }
      }
      if (cleanup_) t = cleanup(t);
    }
  }

 private:
  static std::string cleanup(const std::string& s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    std::string out = s;
    for (const auto& [from, to] : kRules) {
      std::string next;
      size_t last = 0, p, n = std::char_traits<char>::length(from);
      while ((p = out.find(from, last)) != std::string::npos) {
        next.append(out, last, p - last);
        next += to;
        last = p + n;
      }
      next.append(out, last, std::string::npos);
      out.swap(next);
    }
    return out;
  }
  std::string prefix_;
  bool cleanup_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& d : steps_) d->decode_chain(tokens);
  }
  bool joins_byte_tokens() const override {
    for (const auto& d : steps_) {
      if (d->joins_byte_tokens()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::string Decoder::decode(std::vector<std::string> tokens) const {
  decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

std::unique_ptr<Decoder> Decoder::from_json(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = detail::type_of(j, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    int64_t start = detail::get_int(j, "start", 0, where), stop = detail::get_int(j, "stop", 0, where);
    if (start < 0 || stop < 0) detail::fail(where, "start and stop must not be negative");
    return std::make_unique<StripDecoder>(detail::get_char(j, "content", where), size_t(start), size_t(stop));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(
        pattern_from_json(detail::required(j, "pattern", where), where + ".pattern"),
        detail::get_string(j, "content", where));
  }
  if (type == "Metaspace") {
    std::string scheme = detail::get_opt_string(j, "prepend_scheme", where).value_or("always");
    auto add_prefix = j.find("add_prefix_space");
    if (add_prefix != j.end() && add_prefix->is_boolean() && !add_prefix->get<bool>()) scheme = "never";
    return std::make_unique<MetaspaceDecoder>(detail::get_char(j, "replacement", where), scheme != "never");
  }
  if (type == "BPEDecoder") {
    return std::make_unique<BpeDecoder>(detail::get_opt_string(j, "suffix", where).value_or("</w>"));
  }
  if (type == "WordPiece") {
    return std::make_unique<WordPieceDecoder>(detail::get_opt_string(j, "prefix", where).value_or("##"),
                                              detail::get_bool(j, "cleanup", true, where));
  }
  if (type == "Sequence") {
    const json& list = detail::required(j, "decoders", where);
    if (!list.is_array()) detail::fail(where + ".decoders", "expected a list");
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto d = from_json(list[i], where + ".decoders[" + std::to_string(i) + "]");
      if (d) steps.push_back(std::move(d));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  detail::fail(where, "unsupported decoder type '" + type + "'",
               "supported: ByteLevel, ByteFallback, Metaspace, Fuse, Strip, Replace, BPEDecoder, WordPiece, "
               "Sequence");
}

}  // namespace swift::tokenizer
