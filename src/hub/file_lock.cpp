// flock(2) on a lock file.
#include "swift/hub/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "swift/core/error.h"
#include "swift/core/logging.h"

namespace swift::hub {

FileLock::FileLock(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  SWIFT_CHECK(fd_ >= 0, DataError, "cannot create the lock file " + path.string() + ": " + std::strerror(errno),
              "check that the cache folder is writable (or point HF_HUB_CACHE / MODELSCOPE_CACHE elsewhere)");
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  log_info("waiting for another process downloading ", what, " (lock ", path.string(), ")");
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    throw DataError("cannot lock " + path.string() + ": " + std::strerror(err),
                    "the cache's file system may not support flock; point HF_HUB_CACHE / MODELSCOPE_CACHE at a local disk");
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace swift::hub
