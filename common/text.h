// Small text helpers every folder uses: one definition each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hwperf {

// Without leading and trailing spaces, tabs and line ends.
std::string_view trim(std::string_view text);
// An unsigned number in `base` (16 accepts a 0x prefix); nullopt for anything else or overflow.
std::optional<std::uint64_t> parse_u64(std::string_view text, int base = 10);
// A duration as Prometheus writes them ("500ms", "5s", "1m30s"; units ms, s, m, h, whole numbers)
// in milliseconds; nullopt for anything else or overflow.
std::optional<std::uint64_t> parse_duration_ms(std::string_view text);
// A duration as Go's time.ParseDuration reads it ("1h30m", "1.5s", "300us", "-2m"; units ns,
// us, µs, ms, s, m, h, decimal fractions), in seconds: exporter-toolkit's settings are Go
// durations.
std::optional<double> parse_go_duration_seconds(std::string_view text);
std::string to_lower(std::string_view text);
// The words with `separator` between them.
std::string join(const std::vector<std::string>& words, std::string_view separator = ", ");
std::string to_upper(std::string_view text);
bool ends_with(std::string_view text, std::string_view suffix);

// A number for a message a user reads: up to 6 significant digits ("0.05", "1e+09").
std::string format_number(double value);

// Untrusted text (a client's query value, a name read from a process) quoted for a message: at
// most `limit` bytes of it, bytes outside printable ASCII, the quote and the backslash as \xNN,
// and "... (N bytes)" when it was cut.
std::string quoted_excerpt(std::string_view text, std::size_t limit = 64);

// "ENOENT (No such file or directory)": the name a user can search for, and the words.
std::string errno_text(int error);

// Text made safe for HTML element content and double- or single-quoted attribute values.
std::string html_escape_text(std::string_view text);
// A JSON string literal, quotes included. '<', '>' and '&' are escaped too, so the text stays
// inert even if something ever embeds it in HTML.
std::string json_string(std::string_view text);

}  // namespace hwperf
