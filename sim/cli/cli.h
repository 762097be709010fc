#pragma once
// The xpusim command line: `xpusim <command> [options]`. Returns the process exit status:
// 0 success, 1 bad input (config, trace), 2 bad usage (unknown command or flag), 3 internal error.
#include <iosfwd>

namespace xpusim::cli {

int main(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace xpusim::cli
