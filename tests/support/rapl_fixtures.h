// Fixture trees for the RAPL tests (unit and end to end), built in a TempDir so that each test
// writes, and can compute its expectations from, the very values the exporter reads.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectors/rapl/energy_source.h"
#include "tests/support/support.h"
#include "topology/topology.h"

namespace hwperf::test::rapl_fixture {

// The kernel reports max_energy_range_uj as 0xFFFFFFFF hardware units, so a range built this
// way has a counter unit of exactly `unit_uj`.
constexpr std::uint64_t range_for_unit(std::uint64_t unit_uj) { return unit_uj * 0xFFFFFFFFull; }

// energy_uj holds zero-padded digits and "\n", at a width fixed when the zone is written (the
// digits of its range), so that every later value has the same length. Real sysfs never pads;
// the powercap source accepts leading zeros (and trailing whitespace) and nothing else.
inline std::size_t energy_width(std::uint64_t range_uj, std::uint64_t energy_uj) {
  return std::to_string(std::max(range_uj, energy_uj)).size();
}

inline std::string padded_uj(std::uint64_t value, std::size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits + "\n";
}

// Writes a new value over `path` in place: one pwrite at offset 0 of exactly the file's length,
// no truncation, no rename. The powercap source opens energy_uj once and preads it at offset 0
// (as sysfs needs, and as it must once it may no longer open the file), so a value has to land
// in the very file it opened; and a same-length write never shows a reader an empty or short
// file. Linux does not make a pwrite all-or-nothing against a concurrent pread of a regular file:
// a value of 12 digits can be read half old, half new. Up to 7 digits the file is 8 bytes, which
// the kernel copies as one aligned word on x86-64 (no torn read in 8 million tries against a
// busy writer, where 13 bytes tore ~200 times), so tests that write while another process reads
// keep ranges below 10^7 uJ; tests in this process order their writes with the reads instead.
inline void overwrite_in_place(const std::filesystem::path& path, std::uint64_t value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path.string());
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size < 2) {
    ::close(fd);
    throw std::runtime_error(path.string() + " is not a fixed-width fixture value");
  }
  const auto width = static_cast<std::size_t>(info.st_size) - 1;
  const std::string text = padded_uj(value, width);
  const auto written = text.size() == width + 1 ? ::pwrite(fd, text.data(), text.size(), 0) : -1;
  ::close(fd);
  if (written != static_cast<ssize_t>(width + 1)) {
    throw std::runtime_error("cannot write " + std::to_string(value) + " in " +
                             std::to_string(width) + " digits over " + path.string());
  }
}

struct Zone {
  std::string dir;   // "intel-rapl:0", "intel-rapl:0:1", "intel-rapl-mmio:0"
  std::string name;  // what the zone's name file says
  std::uint64_t energy_uj = 0;
  std::uint64_t range_uj = 0;
  std::uint64_t long_term_limit_uw = 0;  // 0: no constraint files
};

inline std::string powercap_path(const std::string& zone_dir) {
  return "sys/class/powercap/" + zone_dir;
}

inline void write_zone(const TempDir& root, const Zone& zone) {
  const std::string base = powercap_path(zone.dir) + "/";
  root.write(base + "name", zone.name + "\n");
  root.write(base + "energy_uj",
             padded_uj(zone.energy_uj, energy_width(zone.range_uj, zone.energy_uj)));
  root.write(base + "max_energy_range_uj", std::to_string(zone.range_uj) + "\n");
  root.write(base + "enabled", "1\n");
  if (zone.long_term_limit_uw != 0) {
    root.write(base + "constraint_0_name", "long_term\n");
    root.write(base + "constraint_0_power_limit_uw",
               std::to_string(zone.long_term_limit_uw) + "\n");
    root.write(base + "constraint_1_name", "short_term\n");
    // PL2 above PL1, as on real parts: the hint is the largest figure listed.
    root.write(base + "constraint_1_power_limit_uw",
               std::to_string(zone.long_term_limit_uw + zone.long_term_limit_uw / 4) + "\n");
  }
}

inline void set_energy(const TempDir& root, const std::string& zone_dir, std::uint64_t energy_uj) {
  overwrite_in_place(root.path() / (powercap_path(zone_dir) + "/energy_uj"), energy_uj);
}

// A two-package server as recent kernels lay it out: the directory index is not the package id
// (intel-rapl:0 is package-1), each package has core, uncore and dram subzones, psys is a zone
// of its own, and intel-rapl-mmio:0 duplicates package-0. Energy values are distinct so that a
// mix-up shows.
inline std::vector<Zone> two_package_zones(std::uint64_t package_unit_uj = 61,
                                           std::uint64_t dram_unit_uj = 15) {
  const std::uint64_t pkg = range_for_unit(package_unit_uj);
  const std::uint64_t dram = range_for_unit(dram_unit_uj);
  return {
      {"intel-rapl:0", "package-1", 1100000, pkg, 150000000},
      {"intel-rapl:0:0", "core", 1200000, pkg, 0},
      {"intel-rapl:0:1", "uncore", 1300000, pkg, 0},
      {"intel-rapl:0:2", "dram", 1400000, dram, 0},
      {"intel-rapl:1", "package-0", 2100000, pkg, 125000000},
      {"intel-rapl:1:0", "core", 2200000, pkg, 0},
      {"intel-rapl:1:1", "uncore", 2300000, pkg, 0},
      {"intel-rapl:1:2", "dram", 2400000, dram, 0},
      {"intel-rapl:2", "psys", 3100000, pkg, 0},
      {"intel-rapl-mmio:0", "package-0", 9900000, pkg, 0},
  };
}

// An AMD EPYC (family 17h/19h) with two sockets as the kernel's intel_rapl_msr driver lays it out
// (AMD register table in drivers/powercap/intel_rapl_msr.c): a package zone per socket with one
// `core` subzone each, and no uncore, dram, psys or MMIO zones. The unit is 2^-16 J, which
// intel_rapl_common.c keeps as 15258 nJ (truncated), so every zone's max_energy_range_uj is
// 0xFFFFFFFF x 15258 / 1000, as AMD machines show it.
inline std::vector<Zone> amd_two_package_zones() {
  const std::uint64_t range = 0xFFFFFFFFull * 15258 / 1000;
  return {
      {"intel-rapl:0", "package-0", 1100000, range, 0},
      {"intel-rapl:0:0", "core", 1200000, range, 0},
      {"intel-rapl:1", "package-1", 2100000, range, 0},
      {"intel-rapl:1:0", "core", 2200000, range, 0},
  };
}

// Linux 6.10 and 6.11 on a 2-socket EPYC with `ccds` CCDs per socket: one package-P-die-D zone
// per CCD, each reading the whole socket's energy register, so all die zones of a socket show
// the same energy (drivers/powercap/intel_rapl_common.c before 6.12's AMD fix).
inline std::vector<Zone> amd_per_ccd_zones(unsigned ccds) {
  const std::uint64_t range = 0xFFFFFFFFull * 15258 / 1000;
  std::vector<Zone> zones;
  unsigned index = 0;
  for (unsigned socket = 0; socket < 2; ++socket) {
    const std::uint64_t socket_energy_uj = 1000000 * (socket + 1) + 12345;
    for (unsigned ccd = 0; ccd < ccds; ++ccd, ++index) {
      const std::string dir = "intel-rapl:" + std::to_string(index);
      zones.push_back({dir, "package-" + std::to_string(socket) + "-die-" + std::to_string(ccd),
                       socket_energy_uj, range, 0});
      zones.push_back({dir + ":0", "core", 5000 + index, range, 0});
    }
  }
  return zones;
}

// --path.sysfs, --path.procfs and --path.devfs under one fixture root.
inline PathsConfig paths_under(const TempDir& root) {
  PathsConfig paths;
  paths.sysfs = (root.path() / "sys").string();
  paths.procfs = (root.path() / "proc").string();
  paths.devfs = (root.path() / "dev").string();
  return paths;
}

inline void write_powercap_tree(const TempDir& root, const std::vector<Zone>& zones) {
  // The control-type directories exist beside the zones and are not zones themselves.
  root.write("sys/class/powercap/intel-rapl/enabled", "1\n");
  root.write("sys/class/powercap/intel-rapl-mmio/enabled", "1\n");
  for (const Zone& zone : zones) write_zone(root, zone);
}

// Packages 0 and 1 with one CPU each, numbered as this VM's CPUs are (0 and 1), so that the perf
// tests can open real events on them.
inline Topology two_package_topology() {
  return Topology({{0, 0, 0, 0}, {1, 0, 1, 1}}, {}, "test: 2 packages x 1 core x 1 PU");
}

// One package, two cores with two threads each: cpus 0,1 on core 0 and 2,3 on core 1.
inline Topology smt_topology() {
  return Topology({{0, 0, 0, 0}, {1, 0, 0, 0}, {2, 1, 0, 0}, {3, 1, 0, 0}}, {},
                  "test: 1 package x 2 cores x 2 PUs");
}

// A fake <devfs>/cpu/N/msr: a regular file with register `address` at byte 8 * address (the real
// device is addressed by register number; see MsrDevice in collectors/rapl/msr_source.cpp).
inline void write_msr(const TempDir& root, unsigned cpu, std::uint64_t address,
                      std::uint64_t value) {
  root.write_u64_at("dev/cpu/" + std::to_string(cpu) + "/msr", 8 * address, value);
}

inline std::string cpuinfo(const std::string& vendor, unsigned family, unsigned model) {
  std::string text;
  for (int cpu = 0; cpu < 2; ++cpu) {
    text += "processor\t: " + std::to_string(cpu) + "\nvendor_id\t: " + vendor +
            "\ncpu family\t: " + std::to_string(family) + "\nmodel\t\t: " + std::to_string(model) +
            "\nmodel name\t: test CPU\n\n";
  }
  return text;
}

// Runs `work` in a child that has become nobody (uid/gid 65534) and returns what it returned:
// root reads any file, so permission failures can only be seen without root. `root` is made
// traversable first (TempDir may be private to its creator).
inline std::string run_as_nobody(const TempDir& root, const std::function<std::string()>& work) {
  ::chmod(root.path().c_str(), 0755);
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    std::string report = "setuid failed";
    if (::setgid(65534) == 0 && ::setuid(65534) == 0) report = work();
    const auto written = ::write(fds[1], report.data(), report.size());
    ::_exit(written == static_cast<ssize_t>(report.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string report;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) {
    report.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return report;
}

// What a source's probe found when nobody ran it: "source" or the failure's reason, a newline,
// then its message.
inline std::string probe_as_nobody(const TempDir& root,
                                   const std::function<rapl::ProbeResult()>& open) {
  return run_as_nobody(root, [&] {
    const auto probe = open();
    return (probe.source ? "source" : probe.reason) + "\n" + probe.message;
  });
}

}  // namespace hwperf::test::rapl_fixture
