// Record assembly (see record_assembly.h). Each leaf column is read front to back by a cursor; a node's entries
// are those of the leaves under it, which move in step: a null or empty node takes one entry from every leaf
// under it, and an entry whose repetition level equals a repeated node's starts that node's next element.
#include "record_assembly.h"

#include <string>

#include "swift/core/error.h"

namespace swift::parquet {
namespace {

using json = nlohmann::json;

[[noreturn]] void disagree(const std::string& what) {
  throw DataError("the columns of a row group disagree: " + what, "the file is damaged; read it with pyarrow to check");
}

class Assembler {
 public:
  Assembler(const SchemaNode& root, const std::vector<ColumnValues>& columns) : leaves_(leaves_of(root)), columns_(columns) {
    entry_.assign(columns.size(), 0);
    value_.assign(columns.size(), 0);
  }

  json row(const SchemaNode& root) {
    for (size_t l = 0; l < columns_.size(); ++l)
      if (!at_end(l) && repetition(l) != 0) disagree("column '" + leaves_[l]->path + "' continues a row it did not start");
    return group(root);
  }

  void check_consumed() const {
    for (size_t l = 0; l < columns_.size(); ++l)
      if (!at_end(l) || value_[l] != columns_[l].values.size())
        disagree("column '" + leaves_[l]->path + "' holds more entries than the row group's rows");
  }

 private:
  bool at_end(size_t l) const { return entry_[l] >= columns_[l].entries; }

  int definition(size_t l) const {
    if (at_end(l)) disagree("column '" + leaves_[l]->path + "' ends before the others");
    const auto& d = columns_[l].definition;
    return d.empty() ? leaves_[l]->definition_level : d[entry_[l]];
  }
  int repetition(size_t l) const {
    const auto& r = columns_[l].repetition;
    return r.empty() ? 0 : r[entry_[l]];
  }

  // Takes one entry from every leaf under `node` (it is null or empty here).
  void skip(const SchemaNode& node) {
    for (int l = node.first_leaf; l < node.first_leaf + node.leaf_count; ++l) {
      if (definition(l) == leaves_[l]->definition_level) ++value_[l];
      ++entry_[l];
    }
  }

  // A field as its parent holds it: null when optional and absent, an array when repeated.
  json field(const SchemaNode& node) {
    if (node.repetition == Repetition::kRequired) return value(node);
    if (definition(node.first_leaf) < node.definition_level) {
      skip(node);
      return node.repetition == Repetition::kRepeated ? json::array() : json(nullptr);
    }
    if (node.repetition == Repetition::kOptional) return value(node);
    json items = json::array();
    do {
      items.push_back(value(node));
    } while (!at_end(node.first_leaf) && repetition(node.first_leaf) == node.repetition_level);
    return items;
  }

  // The node's value where it is defined.
  json value(const SchemaNode& node) {
    if (node.is_leaf()) {
      const size_t l = static_cast<size_t>(node.first_leaf);
      const bool defined = definition(l) == node.definition_level;
      ++entry_[l];
      if (!defined) return nullptr;
      if (value_[l] >= columns_[l].values.size()) disagree("column '" + node.path + "' has fewer values than entries");
      return columns_[l].values[value_[l]++];
    }
    if (node.children.size() == 1 && node.children[0].repetition == Repetition::kRepeated) {
      if (node.is_list()) return list(node);
      if (node.is_map()) return map(node);
    }
    return group(node);
  }

  json group(const SchemaNode& node) {
    json out = json::object();
    for (const auto& child : node.children) out[child.element->name] = field(child);
    return out;
  }

  // LIST: `group (LIST) { repeated group list { element } }` gives [element, ...]; the older two-level forms
  // (a repeated leaf, or a repeated group named "array" / "<name>_tuple" or with several fields) give the
  // repeated values themselves.
  json list(const SchemaNode& node) {
    const SchemaNode& repeated = node.children[0];
    json items = field(repeated);
    const bool unwrap = !repeated.is_leaf() && repeated.children.size() == 1 && repeated.element->name != "array" &&
                        repeated.element->name != node.element->name + "_tuple";
    if (unwrap)
      for (auto& item : items) item = json(item.begin().value());
    return items;
  }

  // MAP: `group (MAP) { repeated group key_value { key; value } }` gives {key: value, ...}.
  json map(const SchemaNode& node) {
    const SchemaNode& entries = node.children[0];
    if (entries.is_leaf() || entries.children.size() != 2) return group(node);
    json out = json::object();
    for (auto& kv : field(entries)) {
      const json& key = kv[entries.children[0].element->name];
      out[key.is_string() ? key.get<std::string>() : key.dump()] = std::move(kv[entries.children[1].element->name]);
    }
    return out;
  }

  std::vector<const SchemaNode*> leaves_;
  const std::vector<ColumnValues>& columns_;
  std::vector<size_t> entry_, value_;
};

}  // namespace

void assemble_rows(const SchemaNode& root, const std::vector<ColumnValues>& columns, int64_t num_rows,
                   std::vector<json>& out) {
  Assembler assembler(root, columns);
  for (int64_t r = 0; r < num_rows; ++r) out.push_back(assembler.row(root));
  assembler.check_consumed();
}

}  // namespace swift::parquet
