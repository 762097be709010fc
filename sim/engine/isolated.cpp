#include "sim/engine/isolated.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include "sim/error.h"

#ifdef XPUSIM_COVERAGE
extern "C" void __gcov_dump();
#endif

namespace xpusim::engine {

IsolatedRun start_isolated(const std::function<std::string()>& work) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string payload;
    char status = 'O';
    try {
      payload = work();
    } catch (const StallError& e) {
      status = 'S';
      payload = e.what();
    } catch (const UserError& e) {
      status = 'U';
      payload = e.what();
    } catch (const std::exception& e) {
      status = 'E';
      payload = e.what();
    }
    payload.insert(payload.begin(), status);
    size_t off = 0;
    while (off < payload.size()) {
      const ssize_t n = write(fds[1], payload.data() + off, payload.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
#ifdef XPUSIM_COVERAGE
    __gcov_dump();  // _exit skips the exit handlers that write a coverage build's counts
#endif
    _exit(0);
  }
  close(fds[1]);
  return {fds[0], static_cast<long>(pid)};
}

std::string finish_isolated(IsolatedRun run, const std::function<bool()>& interrupted) {
  std::string data;
  char buf[65536];
  for (;;) {
    if (interrupted) {
      pollfd p{run.fd, POLLIN, 0};
      const int ready = poll(&p, 1, 100);
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) {
        if (interrupted()) {
          kill(static_cast<pid_t>(run.pid), SIGKILL);
          close(run.fd);
          int ws = 0;
          while (waitpid(static_cast<pid_t>(run.pid), &ws, 0) < 0 && errno == EINTR) {
          }
          throw Interrupted();
        }
        continue;
      }
    }
    const ssize_t n = read(run.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  close(run.fd);
  int wstatus = 0;
  while (waitpid(static_cast<pid_t>(run.pid), &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (data.empty()) throw std::runtime_error("simulation child died without a result");
  const char status = data[0];
  data.erase(0, 1);
  if (status == 'U') throw UserError(data);
  if (status == 'S') throw StallError(data);
  if (status == 'E') throw std::runtime_error(data);
  return data;
}

}  // namespace xpusim::engine
