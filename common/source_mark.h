// Where a value came from in a configuration file, so that later validation (event names, CPU
// lists) can point the user at the line.
#pragma once

#include <string>

namespace hwperf {

// line/column are 1-based; 0 means "not from a file" (a default).
struct SourceMark {
  std::string file;
  int line = 0;
  int column = 0;
  std::string to_string() const;  // "file:line:column", or "default" when not from a file
};

}  // namespace hwperf
