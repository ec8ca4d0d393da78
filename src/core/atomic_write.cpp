// Temp-sibling + rename writes for files and folders.
#include "swift/core/atomic_write.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "swift/core/error.h"

namespace fs = std::filesystem;

namespace swift {

namespace {
std::string tmp_suffix() { return ".tmp-" + std::to_string(::getpid()); }

[[noreturn]] void io_fail(const std::string& what, const fs::path& path) {
  throw DataError(what + " " + path.string() + ": " + std::strerror(errno),
                  "check that the folder exists, is writable and the disk has room");
}
}  // namespace

void atomic_write_file(const fs::path& path, std::string_view bytes) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + tmp_suffix();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_fail("cannot create", tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      ::unlink(tmp.c_str());
      io_fail("cannot write", tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    io_fail("cannot flush", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    io_fail("cannot rename into", path);
  }
}

AtomicDir::AtomicDir(fs::path final_path) : final_(std::move(final_path)) {
  if (final_.has_filename() == false) final_ = final_.parent_path();
  tmp_ = final_.string() + tmp_suffix();
  std::error_code ec;
  fs::remove_all(tmp_, ec);
  fs::create_directories(tmp_, ec);
  if (ec) throw DataError("cannot create folder " + tmp_.string() + ": " + ec.message(),
                          "check that the parent folder is writable");
}

AtomicDir::~AtomicDir() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void AtomicDir::commit() {
  std::error_code ec;
  fs::path old;
  if (fs::exists(final_)) {
    old = final_.string() + ".old" + tmp_suffix();
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    if (ec) throw DataError("cannot replace " + final_.string() + ": " + ec.message(), "check permissions");
  }
  fs::rename(tmp_, final_, ec);
  if (ec) {
    if (!old.empty()) fs::rename(old, final_);
    throw DataError("cannot rename " + tmp_.string() + " to " + final_.string() + ": " + ec.message(),
                    "check permissions");
  }
  committed_ = true;
  if (!old.empty()) fs::remove_all(old, ec);
}

std::vector<std::string> remove_stale_temporaries(const fs::path& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp-");
    if (at == std::string::npos || at + 5 == name.size()) continue;
    const std::string pid_text = name.substr(at + 5);
    if (!std::all_of(pid_text.begin(), pid_text.end(), [](unsigned char c) { return std::isdigit(c); })) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // still running (or not ours to ask)
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
    if (!rm) removed.push_back(name);
  }
  return removed;
}

}  // namespace swift
