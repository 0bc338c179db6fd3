#include "config/config.h"

#include "config/errors.h"

namespace hwperf {
namespace {
std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(std::vector<std::string> problems)
    : std::runtime_error(join_lines(problems)), problems_(std::move(problems)) {}

std::string SourceMark::to_string() const {
  if (line == 0) return "default";
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string TopologyConfig::to_string() const {
  switch (kind) {
    case Kind::system: return "system";
    case Kind::xml: return "xml:" + argument;
    case Kind::synthetic: return "synthetic:" + argument;
  }
  return "system";
}

const char* to_string(Granularity granularity) {
  switch (granularity) {
    case Granularity::cpu: return "cpu";
    case Granularity::core: return "core";
    case Granularity::package: return "package";
    case Granularity::machine: return "machine";
  }
  return "cpu";
}

const char* to_string(CountingDomain domain) {
  switch (domain) {
    case CountingDomain::user: return "user";
    case CountingDomain::kernel: return "kernel";
    case CountingDomain::all: return "all";
  }
  return "all";
}

const char* to_string(PapiAttachMode mode) {
  switch (mode) {
    case PapiAttachMode::automatic: return "auto";
    case PapiAttachMode::cpu_attach: return "cpu_attach";
    case PapiAttachMode::qualifier: return "qualifier";
  }
  return "auto";
}

const char* to_string(RaplInterface interface) {
  switch (interface) {
    case RaplInterface::automatic: return "auto";
    case RaplInterface::powercap: return "powercap";
    case RaplInterface::perf: return "perf";
    case RaplInterface::msr: return "msr";
  }
  return "auto";
}

}  // namespace hwperf
