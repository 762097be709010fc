#include "tests/fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace xpusim::fuzz {
namespace fs = std::filesystem;

const std::string& scratch() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/xpusim-fuzz-XXXXXX";
    if (!mkdtemp(templ.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    const fs::path configs = fs::path(XPUSIM_SOURCE_DIR) / "configs";
    fs::create_directory(fs::path(templ) / "sub");
    for (const auto& e : fs::directory_iterator(configs))
      for (const fs::path& at : {fs::path(templ), fs::path(templ) / "sub"})
        fs::create_symlink(e.path(), at / e.path().filename());
    // Removed at exit (a crash leaves it for inspection). The name is copied: the static this
    // initialises is destroyed before a handler registered during its initialisation runs.
    static char name[4096];
    std::snprintf(name, sizeof name, "%s", templ.c_str());
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(name, ec);
    });
    return templ;
  }();
  return dir;
}

std::string write_input(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = scratch() + "/sub/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

void require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: property broken: %s\n", what.c_str());
  std::abort();
}

}  // namespace xpusim::fuzz
