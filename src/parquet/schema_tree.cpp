// Building the schema tree (see schema_tree.h).
#include "schema_tree.h"

#include "swift/core/error.h"

namespace swift::parquet {
namespace {

constexpr int kMaxNesting = 64;

[[noreturn]] void bad_schema(const std::string& what) {
  throw DataError("malformed Parquet schema: " + what, "the file is damaged; read it with pyarrow to check");
}

void build(const std::vector<SchemaElement>& schema, size_t& next, SchemaNode& node, int depth, int& leaves) {
  if (depth > kMaxNesting) bad_schema("fields nested more than " + std::to_string(kMaxNesting) + " deep");
  const SchemaElement& e = *node.element;
  node.first_leaf = leaves;
  if (e.num_children <= 0) {
    if (!e.type) bad_schema("'" + node.path + "' has neither a type nor fields");
    if (*e.type == PhysicalType::kFixedLenByteArray && e.type_length <= 0)
      bad_schema("fixed-length column '" + node.path + "' has no length");
    node.leaf_count = 1;
    ++leaves;
    return;
  }
  if (static_cast<size_t>(e.num_children) > schema.size() - next)
    bad_schema("'" + node.path + "' claims " + std::to_string(e.num_children) + " fields, more than the schema lists");
  for (int i = 0; i < e.num_children; ++i) {
    if (next >= schema.size()) bad_schema("'" + node.path + "' claims more fields than the schema lists");
    SchemaNode child;
    child.element = &schema[next++];
    const SchemaElement& c = *child.element;
    if (c.repetition && static_cast<int>(*c.repetition) > 2)
      throw DataError("field '" + c.name + "' uses a repetition (VECTOR) this reader does not know",
                      "rewrite the file with lists instead of fixed-size vectors");
    child.repetition = c.repetition.value_or(Repetition::kRequired);
    child.definition_level = node.definition_level + (child.repetition != Repetition::kRequired ? 1 : 0);
    child.repetition_level = node.repetition_level + (child.repetition == Repetition::kRepeated ? 1 : 0);
    child.path = node.path.empty() ? c.name : node.path + "." + c.name;
    build(schema, next, child, depth + 1, leaves);
    node.children.push_back(std::move(child));
  }
  node.leaf_count = leaves - node.first_leaf;
}

void collect(const SchemaNode& node, std::vector<const SchemaNode*>& out) {
  if (node.is_leaf()) out.push_back(&node);
  for (const auto& c : node.children) collect(c, out);
}

}  // namespace

bool SchemaNode::is_list() const {
  return element->logical == kLogicalList || element->converted_type.value_or(-1) == kList;
}

bool SchemaNode::is_map() const {
  const int ct = element->converted_type.value_or(-1);
  return element->logical == kLogicalMap || ct == kMap || ct == kMapKeyValue;
}

SchemaNode build_schema_tree(const std::vector<SchemaElement>& schema) {
  if (schema.empty()) bad_schema("no root");
  SchemaNode root;
  root.element = &schema[0];
  if (schema[0].num_children <= 0) bad_schema("the root has no fields");
  size_t next = 1;
  int leaves = 0;
  build(schema, next, root, 0, leaves);
  if (next != schema.size()) bad_schema(std::to_string(schema.size() - next) + " elements are outside the tree");
  return root;
}

std::vector<const SchemaNode*> leaves_of(const SchemaNode& root) {
  std::vector<const SchemaNode*> out;
  collect(root, out);
  return out;
}

}  // namespace swift::parquet
