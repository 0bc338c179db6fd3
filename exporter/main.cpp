#include <malloc.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "exporter/app.h"

namespace {

// glibc gives each thread that allocates an arena of its own (up to 8 per CPU) and keeps what an
// arena once held; each scrape runs on whichever web worker took its connection. A scrape of a
// megabyte (a command's segment full of threads) left about 11 MB in each of 16 arenas: 190 MB
// with 16 clients. Two arenas, and blocks from 256 KiB mapped on their own and returned when
// freed (glibc otherwise raises that threshold to the largest block freed, up to 32 MiB): 77 MB
// (bench/README.md, "Regions under a hostile program"). The environment's settings still win.
void bound_heap_growth() {
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr && std::getenv("GLIBC_TUNABLES") == nullptr) {
    ::mallopt(M_ARENA_MAX, 2);
  }
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr &&
      std::getenv("GLIBC_TUNABLES") == nullptr) {
    ::mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bound_heap_growth();
  return hwperf::run_exporter(std::vector<std::string>(argv + 1, argv + argc));
}
