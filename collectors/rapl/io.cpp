#include "collectors/rapl/io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hwperf::rapl {

UniqueFd::~UniqueFd() noexcept {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int UniqueFd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

OrErrno<std::string> read_small_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {{}, errno};
  std::string text;
  char buffer[256];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {{}, errno};
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > 65536) break;  // sysfs attributes are one page at most
  }
  return {std::move(text), 0};
}

OrErrno<std::uint64_t> read_u64_file(const std::string& path) {
  const auto text = read_small_file(path);
  if (!text.ok()) return {0, text.error};
  const auto value = parse_u64(trim(text.value));
  if (!value) return {0, EINVAL};
  return {*value, 0};
}

OrErrno<std::uint64_t> pread_counter(const UniqueFd& fd) {
  // 20 digits hold any uint64_t; a sysfs attribute generates all of its text on the read at
  // offset 0, so one pread sees the whole value. A read that fills the buffer is not a counter.
  char buffer[64];
  ssize_t n = 0;
  do {
    n = ::pread(fd.get(), buffer, sizeof buffer, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return {0, errno};
  if (n == static_cast<ssize_t>(sizeof buffer)) return {0, EINVAL};
  const auto value = parse_counter_text(std::string_view(buffer, static_cast<std::size_t>(n)));
  if (!value) return {0, EINVAL};
  return {*value, 0};
}

std::optional<std::uint64_t> parse_counter_text(std::string_view text) {
  const auto end = text.find_first_not_of("0123456789");
  const std::string_view digits = text.substr(0, end);
  if (digits.empty()) return std::nullopt;
  if (end != std::string_view::npos &&
      text.find_first_not_of(" \t\r\n", end) != std::string_view::npos) {
    return std::nullopt;
  }
  return parse_u64(digits);  // nullopt on overflow
}

std::string_view trim(std::string_view text) {
  const char* space = " \t\r\n";
  const auto first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(space);
  return text.substr(first, last - first + 1);
}

std::optional<std::uint64_t> parse_u64(std::string_view text, int base) {
  if (base == 16 && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  const auto b = static_cast<std::uint64_t>(base);
  for (char c : text) {
    std::uint64_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint64_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint64_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    if (digit >= b) return std::nullopt;
    if (value > (UINT64_MAX - digit) / b) return std::nullopt;  // overflow
    value = value * b + digit;
  }
  return value;
}

std::string errno_text(int error) {
  const char* name = ::strerrorname_np(error);
  std::string text = name != nullptr ? name : "errno " + std::to_string(error);
  text += " (";
  text += std::strerror(error);
  text += ")";
  return text;
}

unsigned die_of_cpu(const std::string& sysfs_root, unsigned cpu) {
  const auto die = read_u64_file(sysfs_root + "/devices/system/cpu/cpu" + std::to_string(cpu) +
                                 "/topology/die_id");
  if (!die.ok() || die.value > 0xFFFF) return 0;
  return static_cast<unsigned>(die.value);
}

}  // namespace hwperf::rapl
