// One key of a configuration file's schema, as the code that reads the file declares it.
// docs/reference.md is generated from these, so a key the loader reads is a key the reference
// lists.
#pragma once

#include <string>

namespace hwperf {

struct ConfigKeyInfo {
  std::string path;           // dotted: collectors.papi.granularity
  bool section = false;       // a mapping of further keys
  std::string expected;       // what its reader says it takes, from its own error message
  std::string default_value;  // as --check-config dumps it; "" when it is not dumped
};

}  // namespace hwperf
