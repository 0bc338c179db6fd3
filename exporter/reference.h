// docs/reference.md: every flag and every configuration key in one place, generated from the
// flag table (exporter/cli.cpp) and from the readers of both configuration files, so that the
// reference cannot drift from what the exporter accepts (hwperf_exporter --print-reference).
#pragma once

#include <string>
#include <vector>

namespace hwperf {

// The page. `problems` gets each key a reader declares that has no meaning written for it, and
// each meaning written for a key no reader declares; the page is only right when it stays empty.
std::string reference_markdown(std::vector<std::string>& problems);

}  // namespace hwperf
