#include "sim/io/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sim/error.h"

namespace xpusim::io {

namespace {

// Writes all of `text` to `fd`, through short writes and interrupts; "" or the system's reason.
std::string write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::strerror(errno);
    done += static_cast<size_t>(n);
  }
  return "";
}

}  // namespace

void make_directory(const std::filesystem::path& dir) {
  if (dir.empty()) throw UserError("the output folder's name is empty (--out \"\")");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (std::filesystem::is_directory(dir)) return;
  const std::string why = std::filesystem::exists(dir) ? "it exists and is not a folder" : ec ? ec.message() : "the system refused";
  throw UserError(dir.string() + ": cannot create output directory (" + why + ")");
}

void write_atomically(const std::filesystem::path& path, const std::string& text) {
  // A private temporary name in the same folder (so the rename is atomic), made durable before it
  // replaces the old file: a crash leaves the old file or the new one, never a torn one.
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(path.string() + ": cannot write (check --out): " + std::strerror(errno));
  if (const std::string why = write_all(fd, text); !why.empty()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw UserError(path.string() + ": write failed: " + why);
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
  if (const std::string why = write_all(fd, line); !why.empty()) {
    ::close(fd);
    throw UserError(path.string() + ": write failed: " + why);
  }
  ::fsync(fd);
  ::close(fd);
}

}  // namespace xpusim::io
