#include "common/sysctl.h"

#include <algorithm>

#include "common/files.h"
#include "common/text.h"

namespace hwperf {

std::string read_sysctl(const std::string& procfs, const std::string& name) {
  std::string relative = name;
  std::replace(relative.begin(), relative.end(), '.', '/');
  const std::string path = procfs + "/sys/" + relative;
  const auto text = read_small_file(path);
  if (!text.ok()) return "unknown (cannot read " + path + ")";
  return std::string(trim(text.value));
}

}  // namespace hwperf
