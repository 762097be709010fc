#pragma once
// What the commands of cli.cpp share with those in files of their own (describe.cpp).
#include <boost/program_options.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace xpusim::cli::detail {

// A command line that is wrong in itself (a flag's form, a missing argument): exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Adds the logging flags, parses, prints help if asked (then returns nothing) and sets the
// log level: what every command does before its own work.
std::optional<boost::program_options::variables_map> parse_command(
    const std::string& cmd, const std::vector<std::string>& args, boost::program_options::options_description& d,
    std::ostream& out, const boost::program_options::positional_options_description* pos = nullptr);

// The --set overrides, each of the form key.path=value (the form is the flag's: a usage error;
// the key and the value are the config's to judge: bad input).
std::vector<std::string> sets(const boost::program_options::variables_map& vm);

// `xpusim describe`.
int cmd_describe(const std::string& cmd, const std::vector<std::string>& args, std::ostream& out);

}  // namespace xpusim::cli::detail
