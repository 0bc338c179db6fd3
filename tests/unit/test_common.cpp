// common/: kernel attribute reads that cannot be made to hang or to read the wrong kind of file.
#include "tests/catch.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "common/files.h"
#include "tests/support.h"

using namespace hwperf;

TEST_CASE("an attribute that is a FIFO, a folder or a device is refused at once", "[common]") {
  test::TempDir dir;
  const auto fifo = dir.path() / "energy_uj";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // Opened without O_NONBLOCK this would wait for a writer for ever.
  const auto from_fifo = read_small_file(fifo.string());
  CHECK(from_fifo.error == ENOTSUP);
  CHECK(read_u64_file(fifo.string()).error == ENOTSUP);
  CHECK(open_attribute(dir.path().string()).error == ENOTSUP);
  CHECK(open_attribute("/dev/null").error == ENOTSUP);
  CHECK(open_attribute((dir.path() / "absent").string()).error == ENOENT);

  const auto regular = dir.write("max_energy_range_uj", "262143328850\n");
  const auto value = read_u64_file(regular.string());
  REQUIRE(value.ok());
  CHECK(value.value == 262143328850ull);
}
