// MappedFile: whole-file copy-on-write mappings, empty files, and errors naming the path.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>

#include "distgraph/io/mapped_file.hpp"
#include "support/temp_dir.hpp"

namespace test_io_mapped_file {

using namespace distgraph;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("a mapped file shows the file's bytes and writes to it never reach the disk", "[io]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "bytes.bin";
  write_text(path, "hello mapping");
  MappedFile file(path);
  REQUIRE(file.size() == 13);
  CHECK(std::memcmp(file.data(), "hello mapping", 13) == 0);
  CHECK(file.path() == path.string());
  file.data()[0] = std::byte{'J'};
  CHECK(static_cast<char>(file.data()[0]) == 'J');
  CHECK(read_text(path) == "hello mapping");
}

TEST_CASE("the owner handle keeps a mapping alive after every MappedFile is gone", "[io]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "bytes.bin";
  write_text(path, "abc");
  std::shared_ptr<const void> owner;
  const std::byte* data = nullptr;
  {
    MappedFile file(path);
    MappedFile copy = file;
    CHECK(copy.data() == file.data());
    owner = file.owner();
    data = file.data();
  }
  CHECK(static_cast<char>(data[2]) == 'c');
  owner.reset();
}

TEST_CASE("an empty file maps to zero bytes without calling mmap", "[io]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "empty.bin";
  write_text(path, "");
  MappedFile file(path);
  CHECK(file.size() == 0);
  CHECK(file.data() == nullptr);
  CHECK(file.bytes().empty());
  CHECK(static_cast<bool>(file));
}

TEST_CASE("mapping a missing file throws IoError naming the path and the reason", "[io]") {
  distgraph::test::TempDir tmp;
  const auto path = tmp / "missing.bin";
  try {
    MappedFile file(path);
    FAIL("no exception");
  } catch (const IoError& e) {
    CHECK(e.path() == path.string());
    CHECK_THAT(e.what(),
               Catch::Contains(path.string()) && Catch::Contains("No such file or directory"));
  }
}

TEST_CASE("mapping a folder throws IoError saying it is a folder", "[io]") {
  distgraph::test::TempDir tmp;
  try {
    MappedFile file(tmp.path());
    FAIL("no exception");
  } catch (const IoError& e) {
    CHECK_THAT(e.what(), Catch::Contains(tmp.path().string()) && Catch::Contains("is a folder"));
  }
}

TEST_CASE("mapping an unreadable file throws IoError with the system's reason", "[io]") {
  if (::geteuid() == 0) {
    WARN("SKIPPED: running as root, file permissions do not stop reads");
    return;
  }
  distgraph::test::TempDir tmp;
  const auto path = tmp / "secret.bin";
  write_text(path, "x");
  fs::permissions(path, fs::perms::none);
  try {
    MappedFile file(path);
    FAIL("no exception");
  } catch (const IoError& e) {
    CHECK_THAT(e.what(), Catch::Contains(path.string()) && Catch::Contains("Permission denied"));
  }
}

}  // namespace test_io_mapped_file
