// An exclusive flock(2) on a lock file, as huggingface_hub and modelscope take theirs (Python's filelock uses
// flock too), so ranks of one job and other tools never download the same file at once. The kernel drops it
// when the process dies: a killed download leaves no stale lock.
#pragma once

#include <filesystem>
#include <string>

namespace swift::hub {

class FileLock {
 public:
  // Blocks until the lock is free; says once on stderr's log who it waits for (`what`).
  FileLock(const std::filesystem::path& path, const std::string& what);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace swift::hub
