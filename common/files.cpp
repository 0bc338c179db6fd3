#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/text.h"

namespace hwperf {

OrErrno<UniqueFd> open_attribute(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and a FIFO planted
  // in a mounted tree must not hang startup. Then only a regular file is accepted: sysfs and
  // procfs attributes are regular files, so anything else is not the attribute it claims to be.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return {UniqueFd(), errno};
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return {UniqueFd(), errno};
  if (!S_ISREG(info.st_mode)) return {UniqueFd(), ENOTSUP};
  return {std::move(fd), 0};
}

namespace {

// The whole of a regular file up to `max_bytes`; past that, EFBIG or the first max_bytes.
OrErrno<std::string> read_bounded(const std::string& path, std::size_t max_bytes,
                                  bool larger_is_error) {
  auto opened = open_attribute(path);
  if (!opened.ok()) return {{}, opened.error};
  const UniqueFd fd = std::move(opened.value);
  std::string text;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {{}, errno};
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) {
      if (larger_is_error) return {{}, EFBIG};
      text.resize(max_bytes);
      break;
    }
  }
  return {std::move(text), 0};
}

}  // namespace

OrErrno<std::string> read_small_file(const std::string& path) {
  return read_bounded(path, 65536, false);  // sysfs attributes are one page at most
}

OrErrno<std::string> read_regular_file(const std::string& path, std::size_t max_bytes) {
  return read_bounded(path, max_bytes, true);
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

}  // namespace hwperf
