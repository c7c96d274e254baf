// Catch2 matcher for CHECK_THROWS_MATCHES: the exception's what() contains every given text.
#pragma once

#include <catch2/catch.hpp>
#include <exception>
#include <initializer_list>
#include <string>
#include <vector>

namespace distgraph::test {

/// Matches an exception whose message contains each of `parts`, as in
/// `CHECK_THROWS_MATCHES(f(), NotFound, WhatContains({"tensor 'x'", "no such"}))`.
class WhatContains : public Catch::MatcherBase<std::exception> {
 public:
  WhatContains(std::initializer_list<std::string> parts) : parts_(parts) {}
  explicit WhatContains(std::string part) : parts_{std::move(part)} {}

  bool match(const std::exception& e) const override {
    const std::string what = e.what();
    for (const auto& p : parts_)
      if (what.find(p) == std::string::npos) return false;
    return true;
  }
  std::string describe() const override {
    std::string d = "message contains";
    for (const auto& p : parts_) d += " \"" + p + "\"";
    return d;
  }

 private:
  std::vector<std::string> parts_;
};

}  // namespace distgraph::test
