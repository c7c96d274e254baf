// Small command-line toolkit for the distgraph subcommands: option parsing (CLI11 underneath,
// options also from a TOML file with --config), errors, output.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "option_file.hpp"

namespace distgraph::cli {

/// A usage mistake (unknown option, missing value): printed as one line, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Declarative parser: flags (`--json`), valued options (`--parts 4` or `--parts=4`) and
/// positional arguments, parsed by CLI11; `--config FILE` reads options from a TOML file
/// (OptionFile), the command line's value winning. Unknown options are a UsageError naming them.
class Args {
 public:
  Args(std::string command, std::vector<std::string> argv)
      : command_(std::move(command)),
        argv_(std::move(argv)),
        app_(std::make_unique<CLI::App>("", "distgraph " + command_)) {
    app_->set_help_flag();  // --help is ours: it prints our usage and exits 0
    app_->allow_extras();   // unknown options and extra arguments: our messages (parse)
    app_->add_flag("-h,--help")->configurable(false);
    app_->set_config("--config", "",
                     "options from a TOML file: name = value, the command line wins")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app_->config_formatter(std::make_shared<OptionFile>(*app_));
  }

  /// Declares a boolean flag.
  Args& flag(std::string name, std::string help) {
    app_->add_flag("--" + name)->description(std::move(help))->disable_flag_override();
    return *this;
  }
  /// Declares an option that takes a value (the last one given wins).
  Args& option(std::string name, std::string help) {
    app_->add_option("--" + name)
        ->description(std::move(help))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    return *this;
  }
  /// Parses argv and the --config file; call after declaring. Throws UsageError.
  void parse(std::size_t max_positional) {
    std::vector<const CLI::Option*> slots;
    for (std::size_t i = 0; i < max_positional; ++i)
      slots.push_back(app_->add_option("argument" + std::to_string(i + 1))->configurable(false));
    check_inline_values();
    run_cli11();
    check_leftovers();
    for (const CLI::Option* slot : slots)
      if (slot->count() > 0) positional_.push_back(slot->results().back());
  }

  bool help() const { return has("help"); }
  bool has(const std::string& name) const {
    const CLI::Option* opt = app_->get_option_no_throw("--" + name);
    return opt != nullptr && opt->count() > 0;
  }
  std::optional<std::string> get(const std::string& name) const {
    const CLI::Option* opt = app_->get_option_no_throw("--" + name);
    if (opt == nullptr || opt->count() == 0) return std::nullopt;
    if (opt->get_expected_min() == 0) return "1";  // a flag
    return opt->results().back();
  }
  std::string get_or(const std::string& name, std::string fallback) const {
    return get(name).value_or(std::move(fallback));
  }
  /// An integer option within [lo, hi], or `fallback` when absent.
  std::int64_t get_int(const std::string& name, std::int64_t fallback, std::int64_t lo,
                       std::int64_t hi) const {
    auto v = get(name);
    if (!v) return fallback;
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc{} || p != v->data() + v->size())
      throw UsageError(command_ + ": --" + name + " '" + *v + "' is not an integer");
    if (x < lo || x > hi)
      throw UsageError(command_ + ": --" + name + " " + *v + " out of range; expected [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  /// A real option within [lo, hi], or `fallback` when absent.
  double get_double(const std::string& name, double fallback, double lo, double hi) const {
    auto v = get(name);
    if (!v) return fallback;
    char* end = nullptr;
    const double x = std::strtod(v->c_str(), &end);
    if (v->empty() || end != v->c_str() + v->size() || !(x == x))
      throw UsageError(command_ + ": --" + name + " '" + *v + "' is not a number");
    if (x < lo || x > hi)
      throw UsageError(command_ + ": --" + name + " " + *v + " out of range; expected [" +
                       std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return x;
  }
  const std::vector<std::string>& positional() const noexcept { return positional_; }

  /// Prints `usage` and each declared option with its help text, --config last.
  void print_help(std::string_view usage) const {
    std::printf("usage: %.*s\n\noptions:\n", static_cast<int>(usage.size()), usage.data());
    const auto line = [](const std::string& left, const std::string& help) {
      std::printf("  %-24s %s\n", left.c_str(), help.c_str());
    };
    for (const CLI::Option* opt : app_->get_options()) {
      if (opt->get_positional() || opt == config_option() || opt->get_lnames().front() == "help")
        continue;
      line("--" + opt->get_lnames().front() + (opt->get_expected_min() > 0 ? " VALUE" : ""),
           opt->get_description());
    }
    line("--config FILE", config_option()->get_description());
  }

 private:
  const CLI::Option* config_option() const { return app_->get_config_ptr(); }

  /// CLI11's parse of argv and the --config file, its errors in our words.
  void run_cli11() {
    try {
      app_->parse(std::vector<std::string>(argv_.rbegin(), argv_.rend()));
    } catch (const OptionFileError& e) {
      throw UsageError(command_ + ": --config " + config_file() + ": " + e.what());
    } catch (const CLI::FileError&) {
      throw UsageError(command_ + ": --config " + config_file() +
                       ": cannot read the file; expected a TOML file of options");
    } catch (const CLI::ArgumentMismatch& e) {
      throw UsageError(mismatch_message(e));
    } catch (const CLI::ParseError& e) {
      throw UsageError(command_ + ": " + e.what());
    }
  }

  /// `--flag=value` and `--option=` (nothing after '='), which CLI11 would take as a flag
  /// set to true and as an option waiting for the next argument.
  void check_inline_values() const {
    for (const auto& a : argv_) {
      const auto eq = a.find('=');
      if (a.rfind("--", 0) != 0 || eq == std::string::npos) continue;
      const std::string name = a.substr(0, eq);
      const CLI::Option* opt = app_->get_option_no_throw(name);
      if (opt == nullptr) continue;
      if (opt->get_expected_min() == 0)
        throw UsageError(command_ + ": flag '" + name + "' takes no value");
      if (eq + 1 == a.size()) throw UsageError(command_ + ": option '" + name + "' needs a value");
    }
  }

  /// The --config file named last on the command line.
  std::string config_file() const {
    const auto& r = config_option()->results();
    return r.empty() ? std::string() : r.back();
  }

  /// A valued option with nothing after it, or a flag given a value (`--json=1`).
  std::string mismatch_message(const CLI::ArgumentMismatch& e) const {
    const auto is_option = [&](const std::string& a, bool valued) {
      const CLI::Option* opt = a.rfind("--", 0) == 0 ? app_->get_option_no_throw(a) : nullptr;
      return opt != nullptr && (opt->get_expected_min() > 0) == valued;
    };
    if (!argv_.empty() && is_option(argv_.back(), true))
      return command_ + ": option '" + argv_.back() + "' needs a value";
    for (const auto& a : argv_)
      if (const auto eq = a.find('='); eq != std::string::npos && is_option(a.substr(0, eq), false))
        return command_ + ": flag '" + a.substr(0, eq) + "' takes no value";
    return command_ + ": " + e.what();
  }

  /// What CLI11 left over: an unknown option first, else an argument past the positional ones.
  void check_leftovers() const {
    const std::vector<std::string> rest = app_->remaining();
    for (const auto& a : rest)
      if (a.size() > 1 && a.front() == '-' && a != "--")
        throw UsageError(command_ + ": unknown option '" + a.substr(0, a.find('=')) +
                         "' (see --help)");
    if (!rest.empty()) throw UsageError(command_ + ": unexpected argument '" + rest.front() + "'");
  }

  std::string command_;
  std::vector<std::string> argv_;
  std::unique_ptr<CLI::App> app_;  // on the heap: Args moves, CLI::App does not
  std::vector<std::string> positional_;
};

/// Subcommand entry point: receives the arguments after the subcommand name.
using Command = int (*)(std::vector<std::string> args);

int run_info(std::vector<std::string> args);
int run_partition(std::vector<std::string> args);
int run_chunk(std::vector<std::string> args);
int run_serve(std::vector<std::string> args);
int run_launch(std::vector<std::string> args);
int run_copy(std::vector<std::string> args);
int run_lease(std::vector<std::string> args);
int run_train(std::vector<std::string> args);  // needs libtorch (DISTGRAPH_CLI_TRAIN)
int run_infer(std::vector<std::string> args);  // needs libtorch

}  // namespace distgraph::cli
