#include "tests/support/support.h"

#include <algorithm>
#include <arpa/inet.h>
#include <crypt.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "config/errors.h"
#include "collectors/configuration.h"
#include "exporter/exposition.h"

namespace hwperf::test {
namespace fs = std::filesystem;

fs::path unique_temp_path(const std::string& prefix) {
  static std::mt19937_64 rng{std::random_device{}()};
  return fs::temp_directory_path() /
         (prefix + std::to_string(getpid()) + "-" + std::to_string(rng()));
}

TempDir::TempDir() : path_(unique_temp_path("hwperf-test-")) { fs::create_directories(path_); }

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

fs::path TempDir::write(const std::string& relative, const std::string& content) const {
  const fs::path target = path_ / relative;
  fs::create_directories(target.parent_path());
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + target.string());
  return target;
}

fs::path TempDir::write_u64_at(const std::string& relative, std::uint64_t offset,
                               std::uint64_t value) const {
  const fs::path target = path_ / relative;
  fs::create_directories(target.parent_path());
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT, 0600);
  if (fd < 0) throw std::runtime_error("cannot open " + target.string());
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  const auto written = ::pwrite(fd, bytes, sizeof bytes, static_cast<off_t>(offset));
  ::close(fd);
  if (written != static_cast<ssize_t>(sizeof bytes)) {
    throw std::runtime_error("cannot write 8 bytes at offset " + std::to_string(offset) + " of " +
                             target.string());
  }
  return target;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string fixtures_dir() { return HWPERF_FIXTURES_DIR; }
std::string exporter_binary() { return HWPERF_EXPORTER_BINARY; }
CapturedStderr::CapturedStderr() : path_(unique_temp_path("hwperf-stderr-")) {
  std::fflush(stderr);
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path_.string());
  saved_fd_ = ::dup(2);
  ::dup2(fd, 2);
  ::close(fd);
}

CapturedStderr::~CapturedStderr() {
  std::fflush(stderr);
  if (saved_fd_ >= 0) {
    ::dup2(saved_fd_, 2);
    ::close(saved_fd_);
  }
  std::error_code ignored;
  fs::remove(path_, ignored);
}

std::string CapturedStderr::text() const {
  std::fflush(stderr);
  return read_file(path_);
}
std::vector<Sample> parse_exposition(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    sample.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const auto eq = line.find('=', i);
        std::string name = line.substr(i, eq - i);
        i = eq + 2;  // skip ="
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        ++i;  // closing quote
        if (i < line.size() && line[i] == ',') ++i;
        sample.labels[name] = value;
      }
      ++i;  // '}'
    }
    std::istringstream rest(line.substr(i));
    std::string value;
    rest >> value;
    if (value == "+Inf")
      sample.value = HUGE_VAL;
    else if (value == "-Inf")
      sample.value = -HUGE_VAL;
    else if (value == "NaN")
      sample.value = std::nan("");
    else
      sample.value = std::stod(value);
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::vector<Sample> find_samples(const std::vector<Sample>& samples, const std::string& name,
                                 const std::map<std::string, std::string>& labels) {
  std::vector<Sample> found;
  for (const auto& sample : samples) {
    if (sample.name != name) continue;
    bool match = true;
    for (const auto& [key, value] : labels) {
      const auto it = sample.labels.find(key);
      match = match && it != sample.labels.end() && it->second == value;
    }
    if (match) found.push_back(sample);
  }
  return found;
}

namespace {

// Steal, irq and softirq ticks per CPU ("cpuN user nice system idle iowait irq softirq steal").
std::map<int, std::uint64_t> ticks_outside_tasks() {
  std::map<int, std::uint64_t> ticks;
  std::istringstream stat(read_file("/proc/stat"));
  for (std::string line; std::getline(stat, line);) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 ||
        !std::isdigit(static_cast<unsigned char>(line[3])))
      continue;
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    std::uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
    if (fields >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) {
      ticks[cpu] = irq + softirq + steal;
    }
  }
  if (ticks.empty()) throw std::runtime_error("/proc/stat lists no cpuN line");
  return ticks;
}

}  // namespace

TimeOutsideTasks::TimeOutsideTasks() : ticks_at_start_(ticks_outside_tasks()) {}

double TimeOutsideTasks::seconds(int cpu) const {
  const double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  double total = 0;
  for (const auto& [each, ticks] : ticks_outside_tasks()) {
    if (cpu >= 0 && each != cpu) continue;
    const auto start = ticks_at_start_.find(each);
    const std::uint64_t before = start == ticks_at_start_.end() ? ticks : start->second;
    total += static_cast<double>(ticks - before) * tick + tick;
  }
  return total;
}

bool task_clock_matches(double task_clock, double cpu_time, double outside_tasks) {
  return task_clock >= 0.9 * cpu_time && task_clock <= 1.1 * cpu_time + outside_tasks;
}

double sum_of(const std::vector<Sample>& samples) {
  double sum = 0;
  for (const auto& sample : samples) sum += sample.value;
  return sum;
}

std::vector<Sample> scrape(Collector& collector) {
  // As the exporter serves it: the constant families, then this scrape's through collect_text
  // (which a collector may write without families).
  std::vector<prometheus::MetricFamily> constant;
  collect_constant(collector, constant);
  std::string text = serialize(constant, ExpositionFormat::text_0_0_4);
  collect_text(collector, text, ExpositionFormat::text_0_0_4);
  return parse_exposition(text);
}

double value_of(const std::vector<Sample>& samples, const std::string& name,
                const std::map<std::string, std::string>& labels) {
  const auto found = find_samples(samples, name, labels);
  if (found.size() != 1) {
    throw std::runtime_error("expected one sample of " + name + ", found " +
                             std::to_string(found.size()));
  }
  return found.front().value;
}

Topology with_cpu_identity_from(const Topology& topology, const std::string& procfs_root) {
  return Topology(topology.threads(), topology.caches(), topology.description(),
                  read_cpu_identity(procfs_root));
}

Topology two_socket_topology() {
  std::vector<HardwareThread> threads;
  for (unsigned package = 0; package < 2; ++package) {
    for (unsigned core = 0; core < 2; ++core) {
      for (unsigned smt = 0; smt < 2; ++smt) {
        threads.push_back({package * 4 + core * 2 + smt, core, package, static_cast<int>(package)});
      }
    }
  }
  return Topology(threads, {}, "test: 2 packages x 2 cores x 2 threads");
}

Topology synthetic_topology(const std::string& description) {
  TopologyConfig config;
  config.kind = TopologyConfig::Kind::synthetic;
  config.argument = description;
  return Topology::load(config);
}
std::string bcrypt_hash(const std::string& password, unsigned long cost) {
  crypt_data data{};
  const char* salt = crypt_gensalt_rn("$2b$", cost, nullptr, 0, data.setting, sizeof data.setting);
  if (salt == nullptr) throw std::runtime_error("crypt_gensalt_rn failed");
  const char* hash = crypt_r(password.c_str(), salt, &data);
  if (hash == nullptr) throw std::runtime_error("crypt_r failed");
  return hash;
}

std::string base64(const std::string& text) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (unsigned char c : text) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(buffer >> bits) & 0x3F];
    }
  }
  if (bits > 0) out += alphabet[(buffer << (6 - bits)) & 0x3F];
  while (out.size() % 4 != 0) out += '=';
  return out;
}

std::string basic_auth(const std::string& user, const std::string& password) {
  return "Basic " + base64(user + ":" + password);
}

namespace {

// One whole zlib, gzip or raw deflate stream (as `window_bits` selects) and nothing after it.
std::string inflate_whole(const std::string& data, int window_bits, const char* what) {
  z_stream stream{};
  if (inflateInit2(&stream, window_bits) != Z_OK) {
    throw std::runtime_error(std::string(what) + ": inflateInit2");
  }
  std::string out;
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    const std::size_t used = out.size();
    out.resize(used + 64 * 1024);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    stream.avail_out = 64 * 1024;
    rc = inflate(&stream, Z_NO_FLUSH);
    out.resize(used + 64 * 1024 - stream.avail_out);
  }
  const std::string message = stream.msg == nullptr ? "" : stream.msg;
  const bool whole = rc == Z_STREAM_END && stream.avail_in == 0;
  inflateEnd(&stream);
  if (!whole) {
    throw std::runtime_error(std::string(what) + ": not one complete stream (zlib " +
                             std::to_string(rc) + (message.empty() ? "" : ": " + message) + ")");
  }
  return out;
}

}  // namespace

std::string gunzip(const std::string& data) { return inflate_whole(data, 15 + 16, "gunzip"); }

std::string inflate_raw(const std::string& data) { return inflate_whole(data, -15, "inflate_raw"); }

bool set_cpu1_online(bool online) {
  std::ofstream file(kCpu1OnlineFile);
  file << (online ? "1" : "0") << std::flush;
  return static_cast<bool>(file);
}

bool cpu1_online() {
  std::ifstream file(kCpu1OnlineFile);
  std::string state;
  file >> state;
  return state == "1";
}

void Cpu1Offline::bring_back() {
  for (int attempt = 0; attempt < 50 && !cpu1_online(); ++attempt) {
    set_cpu1_online(true);
    if (!cpu1_online()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string cpu1_hotplug_problem() {
  if (::geteuid() == 0 && ::access(kCpu1OnlineFile, W_OK) == 0) return "";
  return std::string("this test takes CPU 1 offline: run it as root on a machine where ") +
         kCpu1OnlineFile + " is writable";
}

std::string config_error(const std::string& yaml, const std::string& file_name) {
  try {
    parse_config_text(yaml, file_name);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

HttpRequest get_request(const std::string& path, const std::string& authorization) {
  HttpRequest request;
  request.method = "GET";
  request.path = path;
  request.authorization = authorization;
  return request;
}

}  // namespace hwperf::test
