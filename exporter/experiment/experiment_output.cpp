#include "exporter/experiment/experiment_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/log.h"
#include "common/text.h"
#include "config/errors.h"

namespace hwperf {
namespace {

// How often a write that a FIFO's reader holds up looks for a stop signal.
constexpr int kStopLookMs = 200;

bool stop_signal_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  ::sigpending(&pending);
  return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
}

}  // namespace

OutputFile OutputFile::standard(int fd, std::string name) {
  return OutputFile(fd, UniqueFd(), std::move(name));
}

OutputFile OutputFile::open(const std::string& flag, const std::string& path) {
  if (path == "-") return standard(1, "stdout");
  const std::string name = flag + "=" + path;
  // O_NONBLOCK: a FIFO's open would otherwise wait for a reader, deaf to every signal (they are
  // blocked for sigwait). Kept for writes, which poll (write below).
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666));
  if (fd.valid()) {
    const int raw = fd.get();
    return OutputFile(raw, std::move(fd), name);
  }
  const int error = errno;
  if (error == ENXIO) {
    throw ConfigError({name + ": a FIFO that no process has open for reading; start its reader " +
                       "first (e.g. `cat " + path + " &`): the exporter does not wait for one"});
  }
  throw ConfigError({name + ": cannot write it (" + errno_text(error) +
                     "); name a file in a directory you can write, or - for stdout"});
}

bool OutputFile::failed(const std::string& why) {
  error_ = name_ + ": " + why;
  return false;
}

bool OutputFile::write(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd_, text.data(), text.size());
    if (n > 0) {
      text.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A FIFO (or pipe) whose reader is behind: wait for room, and give up on a stop signal.
      if (stop_signal_pending()) return failed("the reader stopped reading; stop signal received");
      pollfd room{fd_, POLLOUT, 0};
      ::poll(&room, 1, kStopLookMs);
      continue;
    }
    return failed("write failed (" + errno_text(n < 0 ? errno : EIO) + ")");
  }
  return true;
}

bool OutputFile::close() {
  if (!owned_.valid()) return true;
  const int fd = owned_.release();
  if (::close(fd) != 0 && errno != EINTR) return failed("close failed (" + errno_text(errno) + ")");
  return true;
}

bool write_and_close(OutputFile& file, std::string_view text) {
  if (file.write(text) && file.close()) return true;
  log::error(file.error());
  return false;
}

}  // namespace hwperf
