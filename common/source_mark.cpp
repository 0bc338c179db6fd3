#include "common/source_mark.h"

namespace hwperf {

std::string SourceMark::to_string() const {
  if (line == 0) return "default";
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace hwperf
