// libFuzzer target: the YAML configuration loader must turn any input into a Config or a
// ConfigError, and the dump of a loaded config must load again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/errors.h"
#include "config/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const hwperf::Config config = hwperf::parse_config_text(text, "fuzz.yml");
    // What --check-config prints is itself a valid configuration.
    hwperf::parse_config_text(hwperf::dump_config(config), "dump.yml");
  } catch (const hwperf::ConfigError&) {
  }
  return 0;
}
