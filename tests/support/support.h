// Helpers shared by tests: temporary directory trees for fixtures, running the real binary,
// reading files. Nothing here asserts; tests do.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "common/unique_fd.h"
#include "web/http.h"
#include "topology/topology.h"

namespace hwperf::test {

// Seconds of the steady clock since `start`: the one helper every timed test uses (copies of it
// in anonymous namespaces collide in the unity build).
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A base for the helpers below that own a directory, a process, an fd or a CPU's state: a copy
// would release it twice.
struct NoCopy {
  NoCopy() = default;
  NoCopy(const NoCopy&) = delete;
  NoCopy& operator=(const NoCopy&) = delete;
};

// A fresh directory under the system temp dir, removed (recursively) on destruction.
class TempDir : NoCopy {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  // Writes `content` to path()/relative, creating parent directories.
  std::filesystem::path write(const std::string& relative, const std::string& content) const;
  // Writes an 8-byte little-endian value at byte `offset`. Fake /dev/cpu/N/msr files keep register
  // r at byte 8 * r (rapl_fixture::write_msr does the multiplication): at byte r, adjacent
  // registers such as AMD's 0xC001029A/0xC001029B would overlap.
  std::filesystem::path write_u64_at(const std::string& relative, std::uint64_t offset,
                                     std::uint64_t value) const;

 private:
  std::filesystem::path path_;
};

// A path under the system temp dir that no other test or process uses: `prefix`, pid, random.
std::filesystem::path unique_temp_path(const std::string& prefix);

std::string read_file(const std::filesystem::path& path);
std::string fixtures_dir();
std::string exporter_binary();

// Variables set (over the test's own environment) in the exporter's process.
using Environment = std::vector<std::pair<std::string, std::string>>;

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the exporter binary with `args` to completion (stdin closed), capturing stdout/stderr.
ProcessResult run_exporter(const std::vector<std::string>& args, int timeout_seconds = 30,
                           const Environment& environment = {});

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // keys lower-cased
  std::string body;                            // raw bytes as sent (not un-gzipped)
};
using Headers = std::vector<std::pair<std::string, std::string>>;
// A TCP connection to 127.0.0.1:port with 5 s send and receive timeouts (and a small receive
// buffer when `receive_buffer` > 0, for clients that should block the server's writes). Throws.
UniqueFd connect_to(unsigned port, int receive_buffer = 0);
// Whether the peer closed the connection within `seconds` (EOF or reset), discarding data.
bool closed_within(int fd, double seconds);

// A plain HTTP/1.1 GET to 127.0.0.1:port (Connection: close). Throws on connection failure.
HttpResponse http_get(unsigned port, const std::string& path, const Headers& headers = {});

// The real binary serving on 127.0.0.1 with an ephemeral port (adds
// --web.listen-address=127.0.0.1:0 and reads the port from its "listening" log line).
// Sends SIGTERM and reaps the child on destruction.
class RunningExporter : NoCopy {
 public:
  explicit RunningExporter(std::vector<std::string> args, const Environment& environment = {});
  ~RunningExporter();
  unsigned port() const { return port_; }
  int pid() const { return pid_; }
  HttpResponse get(const std::string& path, const Headers& headers = {}) const;
  // SIGTERM, wait; returns the exit status (or 128+signal). Idempotent.
  int stop();
  // Waits for the process to end by itself (killed after `timeout_seconds`: -1); its status.
  int wait_exit(int timeout_seconds);
  std::string stderr_text() const;  // everything the process logged so far
  std::string stdout_text() const;  // everything it (and experiment mode's command) printed

 private:
  int pid_ = -1;
  unsigned port_ = 0;
  std::filesystem::path stderr_path_;
  int exit_code_ = -1;
};

// Runs `command` with /bin/sh, stderr joined to stdout; *exit_code is its status (-1 when it did
// not exit normally).
std::string run_shell(const std::string& command, int* exit_code);
// Whether `program` is on PATH (the peers in Debian a test compares with: promtool, perf, ...).
bool have_program(const std::string& program);
// What /usr/bin/python3 prints running `body` over `input` read by python's own csv module (as
// `rows`, csv.DictReader's dicts) or json module (as `s`), so that a test checks that a reader
// other than ours accepts what we write. `body` holds no single quote. When python fails, the
// result is "python3 exited N: " and what it said, which no expected output equals.
std::string read_csv_with_python(const std::string& body, const std::string& input);
std::string read_json_with_python(const std::string& body, const std::string& input);

// Certificates for HTTPS tests, made in `dir` with the openssl command: a CA, a certificate for
// the server at 127.0.0.1 and one for a client (DNS name prometheus.example), both signed by the
// CA, and a self-signed client certificate that no configured CA vouches for. Throws with
// openssl's output when it fails.
struct TestCertificates {
  std::filesystem::path ca_cert;
  std::filesystem::path server_cert, server_key;
  std::filesystem::path client_cert, client_key;
  std::filesystem::path rogue_cert, rogue_key;
};
TestCertificates make_test_certificates(const TempDir& dir);

// One request with curl, a real TLS client; `args` come before the URL (--cacert, --cert, -u, ...).
struct CurlResult {
  int exit_code = -1;  // curl's: 0 once any HTTP response came, whatever its status
  int status = 0;      // 0 when no HTTP response came (handshake refused, connection closed)
  std::string body;
  std::string error;  // what curl said on failure
};
CurlResult curl(const std::vector<std::string>& args, const std::string& url);

// What this process writes to stderr (the log, common/log.h) while it lives: fd 2 goes to a
// temporary file and is restored on destruction. For tests of what gets logged in-process.
class CapturedStderr : NoCopy {
 public:
  CapturedStderr();
  ~CapturedStderr();
  std::string text() const;  // everything written so far

 private:
  std::filesystem::path path_;
  int saved_fd_ = -1;
};

// A bcrypt hash of `password` at `cost`, made with libcrypt (as htpasswd -B would).
std::string bcrypt_hash(const std::string& password, unsigned long cost);
std::string base64(const std::string& text);
// The Authorization header's value for HTTP basic authentication (RFC 7617):
// "Basic " + base64("<user>:<password>").
std::string basic_auth(const std::string& user, const std::string& password);
// Decompresses one gzip stream; throws std::runtime_error when it is not one.
std::string gunzip(const std::string& data);
// A raw deflate stream (RFC 1951, no wrapper), which must end with its last block.
std::string inflate_raw(const std::string& data);

// One sample of a text exposition (0.0.4 or OpenMetrics).
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
std::vector<Sample> parse_exposition(const std::string& text);
// The samples with this name whose labels include every pair in `labels`.
std::vector<Sample> find_samples(const std::vector<Sample>& samples, const std::string& name,
                                 const std::map<std::string, std::string>& labels = {});

// Time the CPUs spent outside the tasks they ran since this object was made, as /proc/stat counts
// it: steal (the hypervisor running something else), irq and softirq. A task-clock or cpu-clock
// event runs on perf_clock(), that is local_clock(), which goes on through both, while a thread's
// CPU time (CLOCK_THREAD_CPUTIME_ID, rusage) runs on the scheduler's rq_clock_task(), which leaves
// them out (kernel/events/core.c task_clock_event_read() and update_context_time();
// kernel/sched/core.c update_rq_clock_task()). On a busy VM host the two differ by that much: a
// spin's 48 ms of thread CPU time was counted as 61 ms of task-clock during CI's ASan step.
class TimeOutsideTasks {
 public:
  TimeOutsideTasks();
  // Seconds on `cpu` (every CPU when negative), plus one tick of /proc/stat's resolution per CPU.
  double seconds(int cpu = -1) const;

 private:
  std::map<int, std::uint64_t> ticks_at_start_;
};
// Whether a task-clock count is the CPU time a thread measured of itself (seconds both): at least
// 90 % of it, and at most 110 % of it plus the time its CPUs spent outside tasks meanwhile.
bool task_clock_matches(double task_clock, double cpu_time, double outside_tasks);

// The sum of the samples' values (a family summed over a label, as sum() in PromQL).
double sum_of(const std::vector<Sample>& samples);

// One scrape of a collector, serialized to the text format and parsed back, so tests check what
// Prometheus would read.
std::vector<Sample> scrape(Collector& collector);
// The value of the single sample matching name and labels; throws (failing the test) otherwise.
double value_of(const std::vector<Sample>& samples, const std::string& name,
                const std::map<std::string, std::string>& labels = {});
// 2 packages x 2 cores x 2 hardware threads (CPUs 0-7), core ids repeating per package as on
// Linux, NUMA node = package.
Topology two_socket_topology();
// hwloc's synthetic topology of `description` ("pack:2 l3:1 core:2 pu:1"), as the config's
// `topology: {synthetic: ...}` loads it.
Topology synthetic_topology(const std::string& description);
// `topology` carrying the CPU identity that Topology::load reads under `procfs_root`.
Topology with_cpu_identity_from(const Topology& topology, const std::string& procfs_root);

// A GET of `path` as the routes and the admission layer see it, with an Authorization header
// when one is given.
HttpRequest get_request(const std::string& path, const std::string& authorization = "");

// What the configuration loader says of `yaml` read as `file_name`: "" when it accepts it.
std::string config_error(const std::string& yaml, const std::string& file_name);

// How many times `what` occurs in `text` (overlapping ones too): a log line said once.

std::size_t occurrences(const std::string& text, const std::string& what);

// CPU hotplug for [live][hotplug] tests (root; ctest runs nothing beside a [live] test).
inline constexpr const char* kCpu1OnlineFile = "/sys/devices/system/cpu/cpu1/online";
bool set_cpu1_online(bool online);
bool cpu1_online();
// CPU 1 offline for the object's life, and brought back on the way out, even when an assertion
// fails.
class Cpu1Offline : NoCopy {
 public:
  Cpu1Offline() : took_offline_(set_cpu1_online(false)) {}
  ~Cpu1Offline() { bring_back(); }
  bool took_offline() const { return took_offline_; }
  void bring_back();

 private:
  bool took_offline_ = false;
};
// Why this process may not take CPU 1 offline, "" when it may.
std::string cpu1_hotplug_problem();

}  // namespace hwperf::test
