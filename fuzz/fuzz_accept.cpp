// libFuzzer target: Accept and Accept-Encoding negotiation take any header a client sends.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "exporter/exposition.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view header(reinterpret_cast<const char*>(data), size);
  const auto format = hwperf::negotiate_format(header);
  (void)hwperf::content_type(format);
  (void)hwperf::accepts_gzip(header);
  return 0;
}
