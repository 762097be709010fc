#pragma once
// Work run in a forked child, its text result read back through a pipe. SystemC elaborates once
// per process, so the tests and the Python API run each simulation this way
// (report::simulate_isolated in sim/report/isolated.h is the simulation's use of it).
//
// In two halves, for callers with threads: the fork (a caller holding a lock that its other
// threads take, such as Python's interpreter lock, forks while no other thread is inside a
// library call whose locks the child would inherit held), then the wait for the result (which
// may run without that lock). The parent closes the pipe's write end before start_isolated
// returns, so one child never keeps another's pipe open.
#include <functional>
#include <stdexcept>
#include <string>

namespace xpusim::engine {

struct IsolatedRun {
  int fd = -1;    // the read end of the child's pipe
  long pid = -1;  // the child
};

// Forks; the child runs `work` and sends back what it returns. A UserError, StallError or other
// exception it throws comes back from finish_isolated as the same kind of error.
IsolatedRun start_isolated(const std::function<std::string()>& work);

// `interrupted`, if given, is asked about ten times a second while the child runs; when it
// says true the child is killed and finish_isolated throws Interrupted (the Python API's
// Ctrl-C, which reaches only the interpreter's process).
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("simulation interrupted") {}
};
std::string finish_isolated(IsolatedRun run, const std::function<bool()>& interrupted = nullptr);

}  // namespace xpusim::engine
