// Reading a Parquet file into rows (see swift/parquet/parquet_file.h): the footer, the schema tree, then each
// row group's column chunks and the rows they make.
#include "swift/parquet/parquet_file.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

#include "column_chunk.h"
#include "record_assembly.h"
#include "schema_tree.h"
#include "swift/core/error.h"

namespace swift::parquet {
namespace {

constexpr char kMagic[] = "PAR1";
constexpr char kEncryptedMagic[] = "PARE";

ColumnLeaf leaf_of(const SchemaNode& node) {
  const SchemaElement& e = *node.element;
  return ColumnLeaf{LeafType{*e.type, e.type_length, ValueConverter(e)}, node.definition_level, node.repetition_level};
}

std::string joined(const std::vector<std::string>& path) {
  std::string out;
  for (const auto& p : path) out += (out.empty() ? "" : ".") + p;
  return out;
}

std::vector<nlohmann::json> read_rows(std::string_view bytes, const ReadLimits& limits) {
  SWIFT_CHECK(bytes.size() >= 12 && bytes.substr(0, 4) == kMagic, DataError, "not a Parquet file (no PAR1 at its start)",
              "check the file; a .parquet file starts and ends with PAR1");
  const std::string_view tail = bytes.substr(bytes.size() - 4);
  SWIFT_CHECK(tail != kEncryptedMagic, DataError, "the file is encrypted (its footer ends with PARE)",
              "decrypt it first; swift reads plain Parquet");
  SWIFT_CHECK(tail == kMagic, DataError, "the file is cut short (no PAR1 at its end)",
              "download or copy it again; a .parquet file ends with PAR1");
  uint32_t footer_length = 0;
  std::memcpy(&footer_length, bytes.data() + bytes.size() - 8, 4);
  SWIFT_CHECK(footer_length <= bytes.size() - 12, DataError,
              "its footer claims " + std::to_string(footer_length) + " bytes, more than the file holds",
              "the file is damaged or cut short; download or copy it again");
  const size_t data_end = bytes.size() - 8 - footer_length;
  const FileMetaData meta = read_file_metadata(bytes.substr(data_end, footer_length), data_end);
  SWIFT_CHECK(!meta.encrypted, DataError, "its columns are encrypted", "decrypt it first; swift reads plain Parquet");

  const SchemaNode root = build_schema_tree(meta.schema);
  const auto leaves = leaves_of(root);
  std::vector<nlohmann::json> rows;
  for (size_t g = 0; g < meta.row_groups.size(); ++g) {
    const RowGroup& group = meta.row_groups[g];
    SWIFT_CHECK(group.columns.size() == leaves.size(), DataError,
                "row group " + std::to_string(g) + " has " + std::to_string(group.columns.size()) +
                    " column chunks for a schema of " + std::to_string(leaves.size()) + " columns",
                "the file is damaged; read it with pyarrow to check");
    std::vector<ColumnValues> columns;
    for (size_t c = 0; c < leaves.size(); ++c) {
      const SchemaNode& leaf = *leaves[c];
      const ColumnMetaData& chunk = group.columns[c];
      SWIFT_CHECK(joined(chunk.path) == leaf.path && chunk.type == *leaf.element->type, DataError,
                  "row group " + std::to_string(g) + " column " + std::to_string(c) + " is '" + joined(chunk.path) +
                      "' where the schema has '" + leaf.path + "' (or another type)",
                  "the file is damaged; read it with pyarrow to check");
      columns.push_back(with_context("column '" + leaf.path + "' of row group " + std::to_string(g), [&] {
        return read_column_chunk(bytes, data_end, chunk, leaf_of(leaf), limits);
      }));
    }
    with_context("row group " + std::to_string(g), [&] { assemble_rows(root, columns, group.num_rows, rows); });
  }
  return rows;
}

}  // namespace

std::vector<nlohmann::json> read_parquet_bytes(std::string_view bytes, const std::string& name, const ReadLimits& limits) {
  return with_context(name, [&] { return read_rows(bytes, limits); });
}

std::vector<nlohmann::json> read_parquet_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  SWIFT_CHECK(in.good(), DataError, "cannot open " + path.string(), "check the path and its permissions");
  // Read straight into one buffer of the file's size (a stringstream would hold the file twice).
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  SWIFT_CHECK(in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())), DataError,
              "cannot read " + path.string(), "check the file and its permissions");
  return read_parquet_bytes(bytes, path.string());
}

}  // namespace swift::parquet
