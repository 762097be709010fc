#include "sim/engine/kernel_cache.h"

#include <fcntl.h>
#include <link.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "sim/error.h"
#include "sim/io/log.h"
#include "sim/version.h"

namespace xpusim::engine {

namespace {

constexpr char kMagic[] = "xpusim kernel cache 1\n";
constexpr uint32_t kRecordTag = 0x4345524b;  // "KREC"
constexpr size_t kCounters = sizeof(OpCounters) / sizeof(double);

// 64-bit FNV-1a over 8-byte words (the engine's megabytes in a few milliseconds), then bytes.
class Hasher {
 public:
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      mix(w);
    }
    for (; n > 0; ++p, --n) mix(*p);
  }
  void add(const std::string& s) {
    const uint64_t n = s.size();
    add(&n, sizeof n);
    add(s.data(), s.size());
  }
  uint64_t value() const { return h_ ^ (h_ >> 29); }

 private:
  void mix(uint64_t w) { h_ = (h_ ^ w) * 0x100000001b3ull; }
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// The whole file, read under a shared lock (runs sharing a kernel cache append under an
// exclusive one, so no record is read half-written). `missing`: set for a file that does not
// exist, instead of an error.
std::string read_file(const std::string& path, const char* what, bool* missing = nullptr) {
  // Not blocking on a FIFO's open; a device or a folder is refused below.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && missing && errno == ENOENT) {
    *missing = true;
    return {};
  }
  struct stat st {};
  if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    close(fd);
    throw UserError(path + ": cannot read " + what + ": not a regular file");
  }
  std::string out;
  bool ok = fd >= 0 && flock(fd, LOCK_SH) == 0;
  char buf[1 << 16];
  for (ssize_t n; ok && (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    else out.append(buf, static_cast<size_t>(n));
  }
  const std::string why = std::strerror(errno);
  if (fd >= 0) close(fd);
  if (!ok) throw UserError(path + ": cannot read " + what + ": " + why);
  return out;
}

// The file this code was loaded from: the binary, or the Python module's shared object.
std::string engine_file() {
  struct Find {
    const void* addr;
    std::string name;
    bool found = false;
  } find{reinterpret_cast<const void*>(&kernel_cache_digest), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Find*>(data);
        const auto a = reinterpret_cast<uintptr_t>(f->addr);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && a >= lo && a < lo + ph.p_memsz) {
            f->name = info->dlpi_name ? info->dlpi_name : "";
            f->found = true;
            return 1;
          }
        }
        return 0;
      },
      &find);
  return find.found && !find.name.empty() ? find.name : "/proc/self/exe";
}

uint64_t engine_digest() {
  static const uint64_t d = [] {
    Hasher h;
    const std::string file = engine_file();
    h.add(read_file(file, "the engine for the kernel cache's digest"));
    return h.value();
  }();
  return d;
}

// Record bodies, written and read field by field in the host's byte order (a cache belongs to
// the engine that wrote it, whose bytes are in its digest).
class Writer {
 public:
  template <class T>
  void put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_doubles(const double* p, size_t n) {
    put(static_cast<uint32_t>(n));
    out_.append(reinterpret_cast<const char*>(p), n * sizeof(double));
  }
  void put_profile(const std::vector<Replay>& prof) {
    put(static_cast<uint32_t>(prof.size()));
    for (const Replay& r : prof) {
      put(r.amount);
      put(static_cast<uint8_t>((r.in_cycles ? 1 : 0) | (r.all_placed ? 2 : 0)));
      put_doubles(reinterpret_cast<const double*>(&r.counters), kCounters);
      put_doubles(r.stats.data(), r.stats.size());
    }
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  // The bytes [pos, end) of `data`, of the record that starts at byte `at`.
  Reader(const std::string& path, const std::string& data, size_t at, size_t pos, size_t end)
      : path_(path), d_(data), pos_(pos), end_(end), at_(at) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, d_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string get_string(size_t n) {
    need(n);
    std::string s = d_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::vector<double> get_doubles(size_t expect, const char* what) {
    const uint32_t n = get<uint32_t>();
    if (n != expect)
      bad("holds " + std::to_string(n) + " " + what + " where this engine keeps " + std::to_string(expect) +
          " (written by another build?)");
    std::vector<double> v(n);
    need(n * sizeof(double));
    std::memcpy(v.data(), d_.data() + pos_, n * sizeof(double));
    pos_ += n * sizeof(double);
    for (double x : v)
      if (!std::isfinite(x)) bad(std::string("holds a value of its ") + what + " that is not finite");
    return v;
  }
  std::vector<Replay> get_profile(size_t stats) {
    const uint32_t n = get<uint32_t>();
    if (n == 0 || n > 4096) bad("holds a profile of " + std::to_string(n) + " segments");
    std::vector<Replay> prof(n);
    for (Replay& r : prof) {
      r.amount = get<double>();
      if (!(std::isfinite(r.amount) && r.amount >= 0)) bad("holds a duration that is not a finite, non-negative number");
      const uint8_t flags = get<uint8_t>();
      if (flags > 3) bad("holds a segment's flags of " + std::to_string(flags));
      r.in_cycles = (flags & 1) != 0;
      r.all_placed = (flags & 2) != 0;
      const std::vector<double> c = get_doubles(kCounters, "counters");
      std::memcpy(reinterpret_cast<double*>(&r.counters), c.data(), sizeof(OpCounters));
      r.stats = get_doubles(stats, "statistics");
    }
    return prof;
  }
  bool done() const { return pos_ == end_; }
  [[noreturn]] void bad(const std::string& what) const {
    throw UserError(path_ + ": the kernel cache's record at byte " + std::to_string(at_) + " " + what +
                    ": delete the file (or name another) and the kernels are simulated again");
  }

 private:
  void need(size_t n) const {
    if (n > end_ - pos_) bad("is shorter than its fields");
  }
  const std::string& path_;
  const std::string& d_;
  size_t pos_, end_, at_;
};

}  // namespace

void read_engine_digest() { engine_digest(); }

uint64_t kernel_cache_digest(const config::LoadedConfig& cfg, double tolerance) {
  Hasher h;
  h.add(std::string(kMagic) + kVersion);
  for (const auto& e : cfg.entries) {
    h.add(e.spec->key);
    // A value naming a file (the energy table) stands for the file's bytes, not its path.
    struct stat st {};
    if (!e.text.empty() && e.text.front() == '/' && stat(e.text.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      h.add(read_file(e.text, "it for the kernel cache's digest"));
    else
      h.add(e.text);
  }
  h.add(&tolerance, sizeof tolerance);
  const uint64_t engine = engine_digest();
  h.add(&engine, sizeof engine);
  return h.value();
}

void load_kernel_cache(const std::string& path, uint64_t digest, size_t stats, MemoTable& memo) {
  bool missing = false;
  const std::string data = read_file(path, "the kernel cache", &missing);
  if (missing || data.empty()) return;  // none yet, or created by a writer that has not written
  const size_t magic = sizeof kMagic - 1;
  if (data.compare(0, magic, kMagic) != 0)
    throw UserError(path + ": not a kernel cache (it does not start with '" + std::string(kMagic, magic - 1) +
                    "'): name another file");
  size_t pos = magic;
  while (pos < data.size()) {
    const size_t at = pos;
    Reader head(path, data, at, pos, data.size());
    if (data.size() - pos < 2 * sizeof(uint32_t)) head.bad("is cut short (a run stopped while writing it?)");
    if (head.get<uint32_t>() != kRecordTag) head.bad("does not start as a record does");
    const uint32_t len = head.get<uint32_t>();
    const size_t body = at + 2 * sizeof(uint32_t);
    if (len > data.size() - body || data.size() - body - len < sizeof(uint64_t))
      head.bad("is cut short (a run stopped while writing it?)");
    Hasher h;
    h.add(data.data() + body, len);
    uint64_t sum;
    std::memcpy(&sum, data.data() + body + len, sizeof sum);
    if (sum != h.value()) head.bad("fails its checksum (the file was damaged)");
    pos = body + len + sizeof sum;
    Reader r(path, data, at, body, body + len);
    if (r.get<uint64_t>() != digest) continue;  // another config's or engine's
    std::string key = r.get_string(r.get<uint32_t>());
    const bool has_cold = r.get<uint8_t>() != 0, has_warm = r.get<uint8_t>() != 0;
    if (!has_cold) r.bad("has no first instance");
    MemoEntry e;
    e.from_file = true;
    e.cold = r.get_profile(stats);
    if (has_warm) e.profile = r.get_profile(stats);
    e.warm = has_warm;
    if (!r.done()) r.bad("is longer than its fields");
    const auto it = memo.find(key);
    if (it == memo.end()) memo.emplace(std::move(key), std::move(e));
    else if (!it->second.warm && e.warm) it->second = std::move(e);
  }
}

void save_kernel_cache(const std::string& path, uint64_t digest, const MemoTable& memo) {
  std::string out;
  for (const auto& [key, e] : memo) {
    if (!e.changed || e.cold.empty()) continue;
    Writer w;
    w.put(digest);
    w.put(static_cast<uint32_t>(key.size()));
    w.bytes() += key;
    w.put(static_cast<uint8_t>(1));
    w.put(static_cast<uint8_t>(e.warm));
    w.put_profile(e.cold);
    if (e.warm) w.put_profile(e.profile);
    Hasher h;
    h.add(w.bytes().data(), w.bytes().size());
    const uint32_t tag = kRecordTag, len = static_cast<uint32_t>(w.bytes().size());
    const uint64_t sum = h.value();
    out.append(reinterpret_cast<const char*>(&tag), sizeof tag);
    out.append(reinterpret_cast<const char*>(&len), sizeof len);
    out += w.bytes();
    out.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  }
  if (out.empty()) return;
  // Failing to save loses no result: the run's report stands, and its kernels are simulated
  // again by the next run.
  const auto warn = [&](const std::string& why) {
    log::warn(path + ": the kernel cache was not saved: " + why + " (this run's report is unaffected)");
  };
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return warn(std::strerror(errno));
  struct stat st {};
  std::string why;
  char head[sizeof kMagic - 1] = {};
  if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_size > 0 && (pread(fd, head, sizeof head, 0) != static_cast<ssize_t>(sizeof head) ||
                                std::memcmp(head, kMagic, sizeof head) != 0)) {
    why = "the file is not a kernel cache, and is left as it is";
  } else {
    if (st.st_size == 0) out.insert(0, kMagic, sizeof kMagic - 1);
    size_t off = 0;
    while (off < out.size() && why.empty()) {
      const ssize_t n = write(fd, out.data() + off, out.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) why = std::strerror(errno);
      else off += static_cast<size_t>(n);
    }
    if (why.empty() && fsync(fd) != 0) why = std::strerror(errno);
    // A record half written would make the file unreadable: it goes, under the same lock.
    if (!why.empty() && ftruncate(fd, st.st_size) != 0) why += "; and the partial record could not be removed";
  }
  close(fd);  // and the lock with it
  if (!why.empty()) warn(why);
}

}  // namespace xpusim::engine
