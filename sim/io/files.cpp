#include "sim/io/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sim/error.h"

namespace xpusim::io {

void make_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) throw UserError(dir.string() + ": cannot create output directory");
}

void write_atomically(const std::filesystem::path& path, const std::string& text) {
  // A private temporary name in the same folder (so the rename is atomic), made durable before it
  // replaces the old file: a crash leaves the old file or the new one, never a torn one.
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(path.string() + ": cannot write (check --out): " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw UserError(path.string() + ": write failed: " + why);
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  std::error_code ec;
  if (synced) std::filesystem::rename(tmp, path, ec);
  if (!synced || ec) {
    ::unlink(tmp.c_str());
    throw UserError(path.string() + ": cannot replace: " + (synced ? ec.message() : std::string(std::strerror(errno))));
  }
}

void append_durably(const std::filesystem::path& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(path.string() + ": cannot append: " + std::strerror(errno));
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw UserError(path.string() + ": write failed: " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

}  // namespace xpusim::io
