// What a gzip scrape weighs against general-purpose compressors (hwperf_bench's gzip size table).
#pragma once

namespace hwperf::bench {

// Prints, for the exposition of 64 synthetic CPUs with every default family and for the RAPL
// fixture of scripts/bench-side-by-side.sh, the body served with gzip (a constant prefix
// deflated once by zlib, each scrape's rest by codes trained on an earlier scrape) against the
// same identity body compressed whole by libdeflate at level 1 (the target: within 10 %), zlib at
// level 1 and libdeflate at level 6.
void run_gzip_size();

}  // namespace hwperf::bench
