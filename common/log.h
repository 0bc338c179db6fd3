// Minimal logfmt logger (node_exporter's format: ts=... level=... msg=...), written to stderr.
// Startup problems are logged once; scrape paths never log per scrape.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"

namespace hwperf {

enum class LogLevel { debug, info, warn, error };

inline constexpr EnumName<LogLevel> kLogLevelNames[] = {{LogLevel::debug, "debug"},
                                                        {LogLevel::info, "info"},
                                                        {LogLevel::warn, "warn"},
                                                        {LogLevel::error, "error"}};
inline const char* to_string(LogLevel level) { return name_of(kLogLevelNames, level); }

}  // namespace hwperf

namespace hwperf::log {

void set_level(LogLevel level);
void write(LogLevel level, std::string_view message);
// Warnings whose message begins with one of `prefixes` ("rapl: ") are written at info level from
// now on (experiment mode: what the system-wide collectors say about the machine). Called before
// any thread logs.
void demote_warnings(std::vector<std::string> prefixes);

inline void debug(std::string_view m) { write(LogLevel::debug, m); }
inline void info(std::string_view m) { write(LogLevel::info, m); }
inline void warn(std::string_view m) { write(LogLevel::warn, m); }
inline void error(std::string_view m) { write(LogLevel::error, m); }

}  // namespace hwperf::log
