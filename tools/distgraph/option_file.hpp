// `--config FILE`: a subcommand's options read from a TOML file by CLI11, each key checked
// against the subcommand's options before CLI11 applies it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <istream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace distgraph::cli {

/// A key of an options file that the subcommand cannot take (thrown while CLI11 reads the
/// file; Args::parse names the file).
class OptionFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// CLI11's TOML reader for one subcommand's options: `epochs = 5`, `fanouts = "10,25"` (or
/// `[10, 25]`, joined with commas as the command line writes it), `standalone = true`.
/// Keys are the option names without dashes; any other key, a section or a flag that is not
/// `true` or `false` is an OptionFileError. A flag set to `false` is left out, as if absent.
class OptionFile : public CLI::ConfigTOML {
 public:
  /// `app` declares the options; it outlives this reader (it owns it).
  explicit OptionFile(const CLI::App& app) : app_(&app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> kept;
    for (CLI::ConfigItem& item : CLI::ConfigTOML::from_config(input)) {
      const CLI::Option* opt = known_option(item);
      // CLI11's reader ends a line at '#', even inside quotes, leaving an open quote.
      for (const auto& v : item.inputs)
        if (!v.empty() && (v.front() == '"' || v.front() == '\'') &&
            (v.size() < 2 || v.back() != v.front()))
          throw OptionFileError("'" + item.name + "': a quoted value cut short (a '#' in a " +
                                "value starts a comment here)");
      if (opt->get_expected_min() > 0) {
        item.inputs = {join(item.inputs)};
      } else if (!flag_value(item)) {
        continue;
      } else {
        item.inputs = {"true"};
      }
      kept.push_back(std::move(item));
    }
    return kept;
  }

 private:
  /// The option `item` sets; throws OptionFileError for anything else.
  const CLI::Option* known_option(const CLI::ConfigItem& item) const {
    if (!item.parents.empty())
      throw OptionFileError("section [" + item.parents.front() +
                            "]; expected keys at the top level");
    const CLI::Option* opt = app_->get_option_no_throw("--" + item.name);
    if (opt == nullptr || !opt->get_configurable())
      throw OptionFileError("unknown option '" + item.name +
                            "'; expected option names without dashes (see --help)");
    return opt;
  }

  /// A flag's value: true or false, nothing else.
  static bool flag_value(const CLI::ConfigItem& item) {
    const std::string value = item.inputs.size() == 1 ? item.inputs.front() : join(item.inputs);
    if (value == "true") return true;
    if (value == "false") return false;
    throw OptionFileError("flag '" + item.name + "' = '" + value + "'; expected true or false");
  }

  /// An array's items as one comma-separated value, as the command line writes lists.
  static std::string join(const std::vector<std::string>& inputs) {
    std::string value;
    for (std::size_t i = 0; i < inputs.size(); ++i) value += (i == 0 ? "" : ",") + inputs[i];
    return value;
  }

  const CLI::App* app_;
};

}  // namespace distgraph::cli
