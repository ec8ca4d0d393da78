// Reading --dataset specs one row at a time for --streaming.
#include "swift/data/row_stream.h"

#include <algorithm>
#include <cctype>

#include "swift/core/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::data {

json StreamPosition::to_json() const {
  return {{"spec", spec}, {"file", file}, {"offset", offset}, {"line", line}, {"taken", taken}};
}

StreamPosition StreamPosition::from_json(const json& j) {
  try {
    StreamPosition p;
    p.spec = j.at("spec").get<size_t>();
    p.file = j.at("file").get<size_t>();
    p.offset = j.at("offset").get<uint64_t>();
    p.line = j.at("line").get<uint64_t>();
    p.taken = j.at("taken").get<uint64_t>();
    return p;
  } catch (const json::exception& e) {
    throw DataError(std::string("a saved stream position is malformed: ") + e.what(),
                    "resume from a checkpoint written by --streaming, or pass --ignore_data_skip true");
  }
}

RowStream::RowStream(const std::vector<std::string>& specs, DatasetOptions options, std::string flag)
    : options_(std::move(options)), flag_(std::move(flag)) {
  for (const auto& text : specs) {
    Source s;
    s.spec = parse_dataset_spec(text, flag_);
    s.builtin = is_builtin_dataset(s.spec.path.string());
    s.files = s.builtin ? std::vector<fs::path>{fs::path()} : spec_files(s.spec, options_, flag_);
    sources_.push_back(std::move(s));
  }
}

bool RowStream::is_jsonl(const Source& s, size_t file) const {
  if (s.builtin) return false;
  std::string ext = s.files[file].extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jsonl";
}

const std::vector<json>& RowStream::whole(size_t spec, size_t file) {
  if (whole_key_ != std::make_pair(spec, file)) {
    const Source& s = sources_[spec];
    whole_ = s.builtin ? builtin_dataset(s.spec.path.string(), options_.builtin) : read_rows(s.files[file]);
    whole_key_ = {spec, file};
  }
  return whole_;
}

json RowStream::parse_line(const std::string& line, const fs::path& file, uint64_t line_no) const {
  json row = json::parse(line, nullptr, false);
  SWIFT_CHECK(!row.is_discarded(), DataError, file.string() + ":" + std::to_string(line_no) + " is not valid JSON",
              "each line of a .jsonl file must be one JSON object");
  SWIFT_CHECK(row.is_object(), DataError, file.string() + ":" + std::to_string(line_no) + " is not a JSON object",
              "each line of a .jsonl file must be one JSON object");
  return row;
}

json RowStream::normalise(json row, const Source& s, const std::string& where) const {
  if (s.builtin) return row;  // built-ins are already in standard form
  return normalise_row(rename_columns(std::move(row), options_.columns), where);
}

void RowStream::seek(const StreamPosition& position) {
  SWIFT_CHECK(position.spec <= sources_.size() &&
                  (position.spec == sources_.size() || position.file <= sources_[position.spec].files.size()),
              DataError, "a saved stream position does not fit " + flag_ + " (spec " + std::to_string(position.spec) + ")",
              "resume with the same " + flag_ + ", or pass --ignore_data_skip true");
  pos_ = position;
  in_key_ = {SIZE_MAX, SIZE_MAX};  // reopen and seek on the next read
}

std::optional<std::pair<json, StreamPosition>> RowStream::next() {
  while (pos_.spec < sources_.size()) {
    const Source& s = sources_[pos_.spec];
    const bool spec_done = pos_.file >= s.files.size() || (s.spec.sample && pos_.taken >= static_cast<uint64_t>(*s.spec.sample));
    if (spec_done) {
      SWIFT_CHECK(pos_.taken > 0 || (s.spec.sample && *s.spec.sample == 0), DataError,
                  "dataset " + s.spec.path.string() + " has no rows", "check the file");
      pos_ = StreamPosition{pos_.spec + 1, 0, 0, 0, 0};
      continue;
    }
    const StreamPosition here = pos_;
    if (is_jsonl(s, pos_.file)) {
      const fs::path& file = s.files[pos_.file];
      if (in_key_ != std::make_pair(pos_.spec, pos_.file)) {
        in_.close();
        in_.clear();
        in_.open(file, std::ios::binary);
        SWIFT_CHECK(in_.good(), DataError, "cannot open dataset " + file.string(), "check the path");
        in_.seekg(static_cast<std::streamoff>(pos_.offset));
        in_key_ = {pos_.spec, pos_.file};
      }
      std::string line;
      if (!std::getline(in_, line)) {
        pos_.file += 1;
        pos_.offset = pos_.line = 0;
        in_key_ = {SIZE_MAX, SIZE_MAX};
        continue;
      }
      pos_.offset += line.size() + (in_.eof() ? 0 : 1);
      pos_.line += 1;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const uint64_t line_no = pos_.line;
      StreamPosition at = here;
      at.line = line_no;  // the row's own line, for messages
      pos_.taken += 1;
      return std::make_pair(normalise(parse_line(line, file, line_no), s, file.string() + " row " + std::to_string(line_no)), at);
    }
    const auto& rows = whole(pos_.spec, pos_.file);
    if (pos_.offset >= rows.size()) {
      pos_.file += 1;
      pos_.offset = pos_.line = 0;
      continue;
    }
    const size_t i = static_cast<size_t>(pos_.offset);
    pos_.offset += 1;
    pos_.line = pos_.offset;
    pos_.taken += 1;
    StreamPosition at = here;
    at.line = i + 1;
    const std::string where = (s.builtin ? s.spec.path.string() : s.files[here.file].string()) + " row " + std::to_string(i + 1);
    return std::make_pair(normalise(rows[i], s, where), at);
  }
  return std::nullopt;
}

json RowStream::read_at(const StreamPosition& position) {
  SWIFT_CHECK(position.spec < sources_.size() && position.file < sources_[position.spec].files.size(), DataError,
              "a saved stream row does not fit " + flag_, "resume with the same " + flag_ + ", or pass --ignore_data_skip true");
  const Source& s = sources_[position.spec];
  if (is_jsonl(s, position.file)) {
    const fs::path& file = s.files[position.file];
    if (reread_path_ != file) {
      reread_.close();
      reread_.open(file, std::ios::binary);
      reread_path_ = file;
    }
    reread_.clear();
    reread_.seekg(static_cast<std::streamoff>(position.offset));
    std::string line;
    SWIFT_CHECK(reread_.good() && std::getline(reread_, line), DataError,
                "cannot re-read " + file.string() + ":" + std::to_string(position.line) + " (changed since the checkpoint?)",
                "resume with the same files, or pass --ignore_data_skip true");
    // A position is always at a row's first byte: a line that is blank here means the file changed.
    return normalise(parse_line(line, file, position.line), s, file.string() + " row " + std::to_string(position.line));
  }
  const auto& rows = whole(position.spec, position.file);
  SWIFT_CHECK(position.offset < rows.size(), DataError, "a saved stream row is past the end of " + s.spec.text,
              "resume with the same files, or pass --ignore_data_skip true");
  return normalise(rows[position.offset], s,
                   (s.builtin ? s.spec.path.string() : s.files[position.file].string()) + " row " + std::to_string(position.offset + 1));
}

}  // namespace swift::data
