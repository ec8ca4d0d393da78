// Reading Parquet's footer and page headers (see parquet_metadata.h; field numbers from parquet.thrift).
#include "parquet_metadata.h"

#include "swift/core/error.h"

namespace swift::parquet {
namespace {

using Field = CompactReader::Field;

// Reads a list, calling read_element() once per element.
template <typename ReadElement>
void read_list(CompactReader& r, ReadElement&& read_element) {
  const auto header = r.read_list_header();
  for (size_t i = 0; i < header.size; ++i) read_element(header.element_type);
}

template <typename Enum>
Enum read_enum(CompactReader& r, uint8_t type, int max, const char* what) {
  const int32_t v = r.read_i32(type);
  SWIFT_CHECK(v >= 0 && v <= max, DataError, std::string("unknown Parquet ") + what + " " + std::to_string(v),
              "the file was written by a newer Parquet writer than this reader knows; convert it to .jsonl");
  return static_cast<Enum>(v);
}

// LogicalType union: which member is set, plus DECIMAL's scale and INTEGER's signedness.
void read_logical_type(CompactReader& r, SchemaElement& e) {
  r.read_struct([&](const Field& f) {
    e.logical = f.id;
    if (f.id == kLogicalDecimal && f.type == CompactReader::kStruct) {
      r.read_struct([&](const Field& d) {
        if (d.id == 1) e.scale = r.read_i32(d.type);
        else r.skip(d.type);
      });
    } else if (f.id == kLogicalInteger && f.type == CompactReader::kStruct) {
      r.read_struct([&](const Field& i) {
        if (i.id == 2) e.integer_signed = r.read_bool(i.type);
        else r.skip(i.type);
      });
    } else {
      r.skip(f.type);
    }
  });
}

SchemaElement read_schema_element(CompactReader& r) {
  SchemaElement e;
  r.read_struct([&](const Field& f) {
    switch (f.id) {
      case 1: e.type = read_enum<PhysicalType>(r, f.type, 7, "physical type"); break;
      case 2: e.type_length = r.read_i32(f.type); break;
      case 3: e.repetition = read_enum<Repetition>(r, f.type, 3, "repetition"); break;
      case 4: e.name = r.read_binary(); break;
      case 5: e.num_children = r.read_i32(f.type); break;
      case 6: e.converted_type = r.read_i32(f.type); break;
      case 7: e.scale = r.read_i32(f.type); break;
      case 10: read_logical_type(r, e); break;
      default: r.skip(f.type);
    }
  });
  return e;
}

ColumnMetaData read_column_metadata(CompactReader& r) {
  ColumnMetaData m;
  r.read_struct([&](const Field& f) {
    switch (f.id) {
      case 1: m.type = read_enum<PhysicalType>(r, f.type, 7, "physical type"); break;
      case 3: read_list(r, [&](uint8_t) { m.path.push_back(r.read_binary()); }); break;
      case 4: m.codec = read_enum<Codec>(r, f.type, 7, "compression codec"); break;
      case 5: m.num_values = r.read_int(f.type); break;
      case 7: m.total_compressed_size = r.read_int(f.type); break;
      case 9: m.data_page_offset = r.read_int(f.type); break;
      case 11: m.dictionary_page_offset = r.read_int(f.type); break;
      default: r.skip(f.type);
    }
  });
  return m;
}

RowGroup read_row_group(CompactReader& r, bool& encrypted) {
  RowGroup g;
  r.read_struct([&](const Field& f) {
    if (f.id == 1) {
      read_list(r, [&](uint8_t) {
        bool has_metadata = false;
        r.read_struct([&](const Field& c) {
          if (c.id == 3) {
            g.columns.push_back(read_column_metadata(r));
            has_metadata = true;
          } else {
            if (c.id == 8 || c.id == 9) encrypted = true;
            r.skip(c.type);
          }
        });
        SWIFT_CHECK(has_metadata || encrypted, DataError, "a Parquet column chunk has no metadata",
                    "the file is damaged; read it with pyarrow to check");
      });
    } else if (f.id == 3) {
      g.num_rows = r.read_int(f.type);
    } else {
      r.skip(f.type);
    }
  });
  return g;
}

}  // namespace

FileMetaData read_file_metadata(std::string_view footer, size_t file_offset) {
  CompactReader r(footer, "Parquet footer", file_offset);
  FileMetaData meta;
  r.read_struct([&](const Field& f) {
    switch (f.id) {
      case 2: read_list(r, [&](uint8_t) { meta.schema.push_back(read_schema_element(r)); }); break;
      case 3: meta.num_rows = r.read_int(f.type); break;
      case 4: read_list(r, [&](uint8_t) { meta.row_groups.push_back(read_row_group(r, meta.encrypted)); }); break;
      case 8: meta.encrypted = true; r.skip(f.type); break;
      default: r.skip(f.type);
    }
  });
  return meta;
}

PageHeader read_page_header(CompactReader& r) {
  PageHeader h;
  r.read_struct([&](const Field& f) {
    switch (f.id) {
      case 1: h.type = read_enum<PageType>(r, f.type, 3, "page type"); break;
      case 2: h.uncompressed_size = r.read_i32(f.type); break;
      case 3: h.compressed_size = r.read_i32(f.type); break;
      case 5:  // DataPageHeader
        r.read_struct([&](const Field& d) {
          switch (d.id) {
            case 1: h.num_values = r.read_i32(d.type); break;
            case 2: h.encoding = read_enum<Encoding>(r, d.type, 9, "encoding"); break;
            case 3: h.definition_level_encoding = read_enum<Encoding>(r, d.type, 9, "encoding"); break;
            case 4: h.repetition_level_encoding = read_enum<Encoding>(r, d.type, 9, "encoding"); break;
            default: r.skip(d.type);
          }
        });
        break;
      case 7:  // DictionaryPageHeader
        r.read_struct([&](const Field& d) {
          switch (d.id) {
            case 1: h.num_values = r.read_i32(d.type); break;
            case 2: h.encoding = read_enum<Encoding>(r, d.type, 9, "encoding"); break;
            default: r.skip(d.type);
          }
        });
        break;
      case 8:  // DataPageHeaderV2
        r.read_struct([&](const Field& d) {
          switch (d.id) {
            case 1: h.num_values = r.read_i32(d.type); break;
            case 2: h.num_nulls = r.read_i32(d.type); break;
            case 4: h.encoding = read_enum<Encoding>(r, d.type, 9, "encoding"); break;
            case 5: h.definition_levels_length = r.read_i32(d.type); break;
            case 6: h.repetition_levels_length = r.read_i32(d.type); break;
            case 7: h.values_compressed = r.read_bool(d.type); break;
            default: r.skip(d.type);
          }
        });
        break;
      default: r.skip(f.type);
    }
  });
  return h;
}

const char* encoding_name(Encoding e) {
  switch (e) {
    case Encoding::kPlain: return "PLAIN";
    case Encoding::kPlainDictionary: return "PLAIN_DICTIONARY";
    case Encoding::kRle: return "RLE";
    case Encoding::kBitPacked: return "BIT_PACKED";
    case Encoding::kDeltaBinaryPacked: return "DELTA_BINARY_PACKED";
    case Encoding::kDeltaLengthByteArray: return "DELTA_LENGTH_BYTE_ARRAY";
    case Encoding::kDeltaByteArray: return "DELTA_BYTE_ARRAY";
    case Encoding::kRleDictionary: return "RLE_DICTIONARY";
    case Encoding::kByteStreamSplit: return "BYTE_STREAM_SPLIT";
  }
  return "an unknown encoding";
}

const char* codec_name(Codec c) {
  switch (c) {
    case Codec::kUncompressed: return "UNCOMPRESSED";
    case Codec::kSnappy: return "SNAPPY";
    case Codec::kGzip: return "GZIP";
    case Codec::kLzo: return "LZO";
    case Codec::kBrotli: return "BROTLI";
    case Codec::kLz4: return "LZ4";
    case Codec::kZstd: return "ZSTD";
    case Codec::kLz4Raw: return "LZ4_RAW";
  }
  return "an unknown codec";
}

}  // namespace swift::parquet
