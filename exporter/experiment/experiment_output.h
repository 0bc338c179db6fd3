// Where `--once` writes what it measured: the exposition (--output, or stdout) and the summary of
// -- CMD (--summary.output, or stderr). Files are opened at startup, before any command runs, and
// never block the exporter: a FIFO nobody reads is refused at once, and a write that cannot finish
// is an error the exit status reports, as is a full disk.
#pragma once

#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace hwperf {

class OutputFile {
 public:
  // The process's own stdout (1) or stderr (2), not owned; `name` says which in errors.
  static OutputFile standard(int fd, std::string name);
  // `path` opened for writing (created, truncated), or stdout for "-". `flag` ("--output") names
  // it in errors. A FIFO that no process has open for reading is refused (open(2) with O_NONBLOCK
  // says ENXIO) rather than waited for. Throws ConfigError naming the flag, the file and the
  // remedy.
  static OutputFile open(const std::string& flag, const std::string& path);

  // Writes all of `text`. False, with error() set, when the file cannot take it (ENOSPC, EPIPE, an
  // I/O error), or when a FIFO's reader stops reading and SIGTERM or SIGINT arrives meanwhile.
  bool write(std::string_view text);
  // Closes an owned file, whose last write errors some file systems report only here.
  bool close();

  const std::string& name() const { return name_; }  // "--output=run.prom", "stdout"
  const std::string& error() const { return error_; }
  // Whether this is the process's stdout, which experiment mode shares with the command.
  bool is_stdout() const { return fd_ == 1; }

 private:
  OutputFile(int fd, UniqueFd owned, std::string name)
      : fd_(fd), owned_(std::move(owned)), name_(std::move(name)) {}
  bool failed(const std::string& why);

  int fd_ = -1;
  UniqueFd owned_;  // invalid for stdout and stderr
  std::string name_;
  std::string error_;
};

// Writes `text` to `file` and closes it; false, with the error logged, when either fails.
bool write_and_close(OutputFile& file, std::string_view text);

}  // namespace hwperf
