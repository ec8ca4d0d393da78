// Post-processors with Hugging Face tokenizers' semantics for a single sequence
// (tokenizers/src/processors/{template,bert,roberta,sequence}.rs).
#include "swift/tokenizer/post_processor.h"

#include <map>

#include "json_util.h"

namespace swift::tokenizer {
namespace {

using detail::json;

// A template: pieces that are either the sequence ($A) or a list of special-token ids.
class Template final : public PostProcessor {
 public:
  struct Part {
    bool sequence = false;
    std::vector<int32_t> ids;
  };
  explicit Template(std::vector<Part> parts) : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const Part& p : parts_) {
      if (p.sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), p.ids.begin(), p.ids.end());
      }
    }
    ids.swap(out);
  }

 private:
  std::vector<Part> parts_;
};

class NoOp final : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    for (const auto& p : steps_) p->process(ids, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

int32_t id_of_pair(const json& j, const char* key, const std::string& where) {
  const json& v = detail::required(j, key, where);
  if (!v.is_array() || v.size() != 2) detail::fail(where + "." + key, "expected [\"token\", id], got " + v.dump());
  return detail::token_id(v[1], where + "." + key + "[1]");
}

std::unique_ptr<PostProcessor> template_from_json(const json& j, const std::string& where) {
  // special_tokens: {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
  std::map<std::string, std::vector<int32_t>> specials;
  auto st = j.find("special_tokens");
  if (st != j.end() && !st->is_null()) {
    detail::expect_object(*st, where + ".special_tokens");
    for (auto it = st->begin(); it != st->end(); ++it) {
      std::string at = where + ".special_tokens[\"" + it.key() + "\"]";
      const json& ids = detail::required(it.value(), "ids", at);
      if (!ids.is_array()) detail::fail(at + ".ids", "expected a list of ids");
      std::vector<int32_t> v;
      for (const json& id : ids) v.push_back(detail::token_id(id, at + ".ids"));
      specials[it.key()] = std::move(v);
    }
  }
  const json& single = detail::required(j, "single", where);
  std::string at = where + ".single";
  std::vector<Template::Part> parts;
  auto special_part = [&](const std::string& name) {
    auto it = specials.find(name);
    if (it == specials.end()) detail::fail(at, "special token '" + name + "' is not in special_tokens");
    Template::Part p;
    p.ids = it->second;
    parts.push_back(std::move(p));
  };
  if (single.is_string()) {
    // "<s> $A" (the form Python accepts; stored files use the object form).
    std::string s = single.get<std::string>();
    size_t pos = 0;
    while (pos < s.size()) {
      size_t end = s.find(' ', pos);
      if (end == std::string::npos) end = s.size();
      std::string piece = s.substr(pos, end - pos);
      pos = end + 1;
      if (piece.empty()) continue;
      std::string name = piece.substr(0, piece.find(':'));
      if (!name.empty() && name[0] == '$') {
        parts.push_back({true, {}});
      } else {
        special_part(name);
      }
    }
    return std::make_unique<Template>(std::move(parts));
  }
  if (!single.is_array()) detail::fail(at, "expected a list of template pieces");
  for (size_t i = 0; i < single.size(); ++i) {
    const json& piece = single[i];
    std::string pat = at + "[" + std::to_string(i) + "]";
    if (piece.contains("Sequence")) {
      std::string id = detail::get_string(piece["Sequence"], "id", pat + ".Sequence");
      if (id != "A") detail::fail(pat, "sequence '" + id + "' in the single-sequence template");
      parts.push_back({true, {}});
    } else if (piece.contains("SpecialToken")) {
      special_part(detail::get_string(piece["SpecialToken"], "id", pat + ".SpecialToken"));
    } else {
      detail::fail(pat, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, got " + piece.dump());
    }
  }
  return std::make_unique<Template>(std::move(parts));
}

}  // namespace

std::unique_ptr<PostProcessor> PostProcessor::from_json(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = detail::type_of(j, where);
  if (type == "TemplateProcessing") return template_from_json(j, where);
  if (type == "ByteLevel") return std::make_unique<NoOp>();
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    std::vector<Template::Part> parts(3);
    parts[0].ids = {id_of_pair(j, "cls", where)};
    parts[1].sequence = true;
    parts[2].ids = {id_of_pair(j, "sep", where)};
    return std::make_unique<Template>(std::move(parts));
  }
  if (type == "Sequence") {
    const json& list = detail::required(j, "processors", where);
    if (!list.is_array()) detail::fail(where + ".processors", "expected a list");
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto p = from_json(list[i], where + ".processors[" + std::to_string(i) + "]");
      if (p) steps.push_back(std::move(p));
    }
    return std::make_unique<SequenceProcessor>(std::move(steps));
  }
  detail::fail(where, "unsupported post-processor type '" + type + "'",
               "supported: TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing, Sequence");
}

std::unique_ptr<PostProcessor> PostProcessor::bos_eos(int32_t bos_id, int32_t eos_id) {
  std::vector<Template::Part> parts;
  if (bos_id >= 0) parts.push_back({false, {bos_id}});
  parts.push_back({true, {}});
  if (eos_id >= 0) parts.push_back({false, {eos_id}});
  return std::make_unique<Template>(std::move(parts));
}

}  // namespace swift::tokenizer
