#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace hwperf::log {
namespace {
std::atomic<LogLevel> g_level{LogLevel::info};
std::vector<std::string> g_demoted;  // written before any thread logs, read-only after
std::mutex g_write_mutex;

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  out += '"';
  return out;
}
}  // namespace

void set_level(LogLevel lvl) { g_level.store(lvl); }

void demote_warnings(std::vector<std::string> prefixes) { g_demoted = std::move(prefixes); }

void write(LogLevel lvl, std::string_view message) {
  if (lvl == LogLevel::warn) {
    for (const auto& prefix : g_demoted) {
      if (message.substr(0, prefix.size()) == prefix) lvl = LogLevel::info;
    }
  }
  if (static_cast<int>(lvl) < static_cast<int>(g_level.load())) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  const std::lock_guard<std::mutex> lock(g_write_mutex);
  std::fprintf(stderr, "ts=%s.%03dZ level=%s msg=%s\n", stamp, static_cast<int>(millis),
               to_string(lvl), quoted(message).c_str());
}

}  // namespace hwperf::log
