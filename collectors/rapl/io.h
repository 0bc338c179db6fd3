// Small I/O pieces the RAPL sources share: one owner for a file descriptor, reading short sysfs
// files, and naming an errno for a message a user reads.
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

// Reads a whole small file (sysfs attributes). EINVAL is never produced here.
OrErrno<std::string> read_small_file(const std::string& path);
// Reads a file holding one unsigned decimal number; a file that does not hold one gives EINVAL.
OrErrno<std::uint64_t> read_u64_file(const std::string& path);

std::string_view trim(std::string_view text);
std::optional<std::uint64_t> parse_u64(std::string_view text, int base = 10);

// "ENOENT (No such file or directory)".
std::string errno_text(int error);

// The die a CPU belongs to within its package, from <sysfs>/devices/system/cpu/cpuN/topology/
// die_id; 0 where the kernel does not report dies.
unsigned die_of_cpu(const std::string& sysfs_root, unsigned cpu);

}  // namespace hwperf::rapl
