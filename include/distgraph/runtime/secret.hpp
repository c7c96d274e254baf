// Shared secrets come from files, so they never appear in a process list or environment.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "distgraph/core/error.hpp"

namespace distgraph {

/// Reads the shared secret in `path` (trailing newlines removed). Throws IoError when
/// the file is unreadable, InvalidArgument when it is empty, over 4 KiB, or readable by
/// other users (mode & 077: anyone on the machine could join the cluster).
inline std::string read_secret_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw IoError(path.string(), "secret file missing or not a regular file");
  if ((st.st_mode & 077) != 0)
    throw InvalidArgument(path.string() + ": secret file is readable by other users; chmod 600 it");
  if (st.st_size > 4096) throw InvalidArgument(path.string() + ": secret file over 4 KiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path.string(), "cannot read the secret file");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.empty()) throw InvalidArgument(path.string() + ": secret file is empty");
  return s;
}

}  // namespace distgraph
