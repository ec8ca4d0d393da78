// Run folders and the JSONL training log.
#include "swift/train/run_dir.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "swift/core/error.h"

namespace fs = std::filesystem;

namespace swift::train {

fs::path create_run_dir(const fs::path& output_dir, bool add_version) {
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  SWIFT_CHECK(!ec, DataError, "cannot create --output_dir " + output_dir.string() + ": " + ec.message(),
              "check the path is writable");
  if (!add_version) return output_dir;
  int versions = 0;
  for (const auto& entry : fs::directory_iterator(output_dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.size() > 1 && name[0] == 'v' && std::isdigit(static_cast<unsigned char>(name[1])))
      ++versions;
  }
  const std::time_t now = std::time(nullptr);
  std::ostringstream name;
  name << "v" << versions << "-" << std::put_time(std::localtime(&now), "%Y%m%d-%H%M%S");
  fs::path dir = output_dir / name.str();
  fs::create_directories(dir, ec);
  SWIFT_CHECK(!ec, DataError, "cannot create " + dir.string() + ": " + ec.message(), "check the path is writable");
  return dir;
}

JsonlLog::JsonlLog(const fs::path& path) : path_(path), out_(path, std::ios::app) {
  SWIFT_CHECK(out_.good(), DataError, "cannot write " + path.string(), "check the run folder is writable");
}

void JsonlLog::write(const nlohmann::ordered_json& row) {
  out_ << row.dump() << "\n";
  out_.flush();
  SWIFT_CHECK(out_.good(), DataError, "writing " + path_.string() + " failed", "check the disk has room");
}

std::string format_duration(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  std::ostringstream out;
  if (s >= 3600) out << s / 3600 << "h ";
  if (s >= 60) out << (s % 3600) / 60 << "m ";
  out << s % 60 << "s";
  return out.str();
}

std::string format_log_row(const nlohmann::ordered_json& row) {
  std::ostringstream out;
  out << "{";
  bool first = true;
  for (auto it = row.begin(); it != row.end(); ++it) {
    out << (first ? "" : ", ") << "'" << it.key() << "': ";
    first = false;
    if (it.value().is_number_float()) {
      const double v = it.value().get<double>();
      out << std::setprecision(std::abs(v) < 1e-3 && v != 0 ? 3 : 5) << (std::abs(v) < 1e-3 && v != 0 ? std::scientific : std::defaultfloat) << v
          << std::defaultfloat;
    } else if (it.value().is_string()) {
      out << "'" << it.value().get<std::string>() << "'";
    } else {
      out << it.value().dump();
    }
  }
  out << "}";
  return out.str();
}

}  // namespace swift::train
