// The user guide's code snippets marked `<!-- snippet: PATH -->` are lines of PATH, a
// program the build compiles and the tests run: the guide cannot drift from working code.
// (Every other ```cpp block is compiled by the doc_snippet tests, tests/docs/.)
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace test_tools_docs {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  REQUIRE(in);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("every marked snippet of the user guide is code from the program it names", "[docs]") {
  const fs::path root = DISTGRAPH_SOURCE_DIR;
  const auto guide = lines_of(root / "docs" / "GUIDE.md");
  const std::string marker = "<!-- snippet: ";
  int snippets = 0;
  for (std::size_t i = 0; i < guide.size(); ++i) {
    if (guide[i].rfind(marker, 0) != 0) continue;
    const std::string rel = guide[i].substr(marker.size(), guide[i].find(" -->") - marker.size());
    if (rel.rfind("not compiled", 0) == 0) continue;  // an opt-out (tests/docs/check_snippets.sh)
    INFO("GUIDE.md line " << i + 1 << ": snippet of " << rel);
    REQUIRE(fs::exists(root / rel));
    std::set<std::string> source;
    for (const auto& l : lines_of(root / rel)) source.insert(trim(l));
    REQUIRE(i + 1 < guide.size());
    REQUIRE(guide[i + 1].rfind("```", 0) == 0);
    std::size_t j = i + 2, checked = 0;
    for (; j < guide.size() && guide[j].rfind("```", 0) != 0; ++j) {
      if (trim(guide[j]).empty()) continue;
      INFO("snippet line: " << guide[j]);
      CHECK(source.count(trim(guide[j])) == 1);
      ++checked;
    }
    CHECK(j < guide.size());  // the block is closed
    CHECK(checked > 3);
    ++snippets;
  }
  CHECK(snippets >= 1);
}

}  // namespace test_tools_docs
