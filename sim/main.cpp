#include <cstdlib>
#include <iostream>

#include "sim/cli/cli.h"

int main(int argc, char** argv) {
  // SystemC prints a banner on first use unless told not to; reports are ours to print.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return xpusim::cli::main(argc, argv, std::cout, std::cerr);
}
