// Small I/O pieces the RAPL sources share: one owner for a file descriptor, reading short sysfs
// files (once, at startup) and counter attributes (through a descriptor kept open), and naming
// an errno for a message a user reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hwperf::rapl {

// Owns one file descriptor. Move-only; the moved-from object holds -1.
class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  ~UniqueFd() noexcept;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept;

 private:
  int fd_ = -1;
};

// A value or the errno that prevented it. error == 0 means `value` is valid.
template <typename T>
struct OrErrno {
  T value{};
  int error = 0;
  bool ok() const { return error == 0; }
};

// Reads a whole small file (sysfs attributes): open, read, close. For what is read at startup
// only; a counter read on every scrape is opened once and read with pread_counter().
// EINVAL is never produced here.
OrErrno<std::string> read_small_file(const std::string& path);
// Reads a file holding one unsigned decimal number; a file that does not hold one gives EINVAL.
OrErrno<std::uint64_t> read_u64_file(const std::string& path);

// Reads a counter attribute (powercap energy_uj) through a descriptor opened once at startup:
// one pread at offset 0, which makes sysfs generate the value afresh, so the file is never
// reopened (opening energy_uj needs root since Linux 5.10, which the exporter may have given up
// after startup) and nothing is allocated on the scrape path. Text that parse_counter_text()
// refuses gives EINVAL.
OrErrno<std::uint64_t> pread_counter(const UniqueFd& fd);
// An unsigned decimal number as a counter attribute holds it: one or more digits, then nothing
// but whitespace (sysfs ends it with "\n"). Leading zeros are accepted (the test fixtures pad to a
// fixed width so that they can rewrite a value in place); a sign, leading or inner whitespace,
// any other character, or a value above UINT64_MAX is not.
std::optional<std::uint64_t> parse_counter_text(std::string_view text);

std::string_view trim(std::string_view text);
std::optional<std::uint64_t> parse_u64(std::string_view text, int base = 10);

// "ENOENT (No such file or directory)".
std::string errno_text(int error);

// The die a CPU belongs to within its package, from <sysfs>/devices/system/cpu/cpuN/topology/
// die_id; 0 where the kernel does not report dies.
unsigned die_of_cpu(const std::string& sysfs_root, unsigned cpu);

}  // namespace hwperf::rapl
