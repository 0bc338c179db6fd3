// Reading the kernel's small files (sysfs and procfs attributes) without surprises: at startup
// with read_small_file(), on the scrape path through a descriptor opened once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace hwperf {

// A value or the errno that prevented it. error == 0 means `value` is valid.
template <typename T>
struct OrErrno {
  T value{};
  int error = 0;
  bool ok() const { return error == 0; }
};

// Opens a kernel attribute file for reading without blocking, and only if it is a regular file
// (ENOTSUP otherwise: a FIFO, socket or device in a mounted tree is no attribute).
OrErrno<UniqueFd> open_attribute(const std::string& path);

// Reads a whole small file (sysfs attributes) opened with open_attribute(): open, read, close.
// For what is read at startup only; a counter read on every scrape is opened once and read with
// pread_counter(). EINVAL is never produced here.
OrErrno<std::string> read_small_file(const std::string& path);
// Reads a whole regular file of at most `max_bytes` (a configuration file): ENOTSUP when it is
// not a regular file (a directory, FIFO or device, which would block or never end), EFBIG when
// it is larger.
OrErrno<std::string> read_regular_file(const std::string& path, std::size_t max_bytes);

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

}  // namespace hwperf
