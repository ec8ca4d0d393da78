// A Parquet schema as a tree (the footer lists it flattened, depth first), with each node's definition and
// repetition levels and the leaf columns under it: what record assembly walks.
#pragma once

#include <string>
#include <vector>

#include "parquet_metadata.h"

namespace swift::parquet {

struct SchemaNode {
  const SchemaElement* element = nullptr;
  Repetition repetition = Repetition::kRequired;
  std::vector<SchemaNode> children;  // empty for a leaf
  int definition_level = 0;          // optional or repeated nodes from the root down to this one, inclusive
  int repetition_level = 0;          // repeated nodes from the root down to this one, inclusive
  int first_leaf = 0;                // index of the first leaf column under this node (itself, for a leaf)
  int leaf_count = 0;
  std::string path;                  // dotted, for messages ("messages.list.element.content")

  bool is_leaf() const { return children.empty(); }
  bool is_list() const;              // annotated LIST
  bool is_map() const;               // annotated MAP (or MAP_KEY_VALUE)
};

// The tree of a footer's schema (its first element is the root). DataError for a malformed schema.
SchemaNode build_schema_tree(const std::vector<SchemaElement>& schema);

// The leaves in column order.
std::vector<const SchemaNode*> leaves_of(const SchemaNode& root);

}  // namespace swift::parquet
