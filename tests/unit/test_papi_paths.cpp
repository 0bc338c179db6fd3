// The PAPI collector's remedies name files under --path.procfs, not the test host's /proc: in a
// container the host's procfs is mounted elsewhere, and its perf_event_paranoid is the one that
// matters. permission_remedy() reads a file and calls no PAPI, so this runs anywhere.
#include "tests/catch.hpp"
#include <string>

#include "collectors/papi/papi_remedies.h"
#include "tests/support/support.h"

using namespace hwperf;

TEST_CASE("the permission remedy reports perf_event_paranoid from --path.procfs", "[papi]") {
  test::TempDir procfs;
  procfs.write("sys/kernel/perf_event_paranoid", "3\n");
  const std::string remedy = papi::permission_remedy(procfs.path().string());
  CHECK_THAT(remedy, Catch::Contains("kernel.perf_event_paranoid <= 0 (it is 3 here)") &&
                         Catch::Contains("sysctl kernel.perf_event_paranoid=0") &&
                         Catch::Contains("CAP_PERFMON"));
}

TEST_CASE("the permission remedy names the file it could not read under --path.procfs", "[papi]") {
  test::TempDir procfs;  // empty: no sys/kernel/perf_event_paranoid
  const std::string remedy = papi::permission_remedy(procfs.path().string());
  CHECK_THAT(remedy, Catch::Contains("unknown (cannot read " + procfs.path().string() +
                                     "/sys/kernel/perf_event_paranoid)"));
  CHECK_THAT(remedy, !Catch::Contains("/proc/sys"));
}
