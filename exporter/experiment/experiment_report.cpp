// The summary of `--once -- CMD` written out (--summary.format): perf stat's text for a person,
// CSV and JSON for a notebook. Over several runs (--repeat) each value is the mean of the runs
// that have one, with the relative spread, sample standard deviation / mean, beside it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/text.h"
#include "exporter/experiment/experiment.h"

namespace hwperf {
namespace {

struct Stats {
  std::size_t runs = 0;  // runs with a value
  double mean = 0;
  double stddev = 0;  // sample standard deviation (N - 1); 0 for one run
  double relative() const { return mean != 0 ? stddev / std::fabs(mean) : 0; }
};

Stats stats_of(const std::vector<std::optional<double>>& values) {
  Stats stats;
  double sum = 0;
  for (const auto& value : values) {
    if (!value) continue;
    ++stats.runs;
    sum += *value;
  }
  if (stats.runs == 0) return stats;
  stats.mean = sum / static_cast<double>(stats.runs);
  if (stats.runs < 2) return stats;
  double squares = 0;
  for (const auto& value : values) {
    if (value) squares += (*value - stats.mean) * (*value - stats.mean);
  }
  stats.stddev = std::sqrt(squares / static_cast<double>(stats.runs - 1));
  return stats;
}

std::vector<std::optional<double>> elapsed(const ExperimentSummary& summary) {
  std::vector<std::optional<double>> seconds;
  for (const auto& run : summary.runs) seconds.emplace_back(run.seconds);
  return seconds;
}

std::string grouped(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.0f", value);
  std::string digits = text, out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[i - 1] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

std::string value_text(double value) {
  if (value >= 1e6 || value <= -1e6) return grouped(value);
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

// "  ( +-  1.23% )" after a value over several runs, as perf stat -r prints it.
std::string spread_text(const ExperimentSummary& summary, const Stats& stats) {
  if (summary.runs.size() < 2 || stats.runs == 0) return "";
  char text[64];
  std::snprintf(text, sizeof text, "  ( +- %5.2f%% )", 100 * stats.relative());
  return text;
}

int column_width(const std::string& column) {
  return static_cast<int>(std::max<std::size_t>(column.size(), 14));
}

std::string region_header(const std::vector<std::string>& columns, const char* first) {
  char cell[96];
  std::snprintf(cell, sizeof cell, "%12s", first);
  std::string text = cell;
  for (const auto& column : columns) {
    std::snprintf(cell, sizeof cell, "  %*s", column_width(column), column.c_str());
    text += cell;
  }
  return text + "\n";
}

std::string region_cell(const std::string& column, double value) {
  char cell[96];
  if (ends_with(column, "seconds")) {
    std::snprintf(cell, sizeof cell, "  %*.6f", column_width(column), value);
  } else {
    std::snprintf(cell, sizeof cell, "  %*s", column_width(column), grouped(value).c_str());
  }
  return cell;
}

// One run: each region as likwid-perfctr -m prints it, one row per thread, then the sum.
std::string regions_text(const ExperimentSummary& summary) {
  std::string text;
  for (const auto& table : summary.regions) {
    text += "\n Region " + table.region + ":\n" + region_header(table.columns, "thread");
    for (const auto& row : table.rows) {
      char cell[96];
      std::snprintf(cell, sizeof cell, "%12s", row.thread.c_str());
      text += cell;
      for (std::size_t c = 0; c < row.values.size(); ++c) {
        text += region_cell(table.columns[c], row.values[c]);
      }
      text += "\n";
    }
  }
  return text;
}

// Several runs: each region's sum over its threads, as the mean over the runs and the relative
// spread, as the events are shown (each run's threads are in the CSV and JSON summaries).
std::string regions_over_runs_text(const ExperimentSummary& summary) {
  std::string text;
  for (const auto& region : regions_over_runs(summary)) {
    const std::size_t entered = region.values.empty() ? 0 : stats_of(region.values[0]).runs;
    text += "\n Region " + region.region + " (" + std::to_string(summary.runs.size()) + " runs" +
            (entered < summary.runs.size() ? ", entered in " + std::to_string(entered) : "") +
            "; each run's sum over its threads):\n" + region_header(region.columns, "");
    std::string means, spreads;
    char cell[96];
    for (std::size_t c = 0; c < region.columns.size(); ++c) {
      const Stats stats = stats_of(region.values[c]);
      means += region_cell(region.columns[c], stats.mean);
      std::snprintf(cell, sizeof cell, "  %*.2f%%", column_width(region.columns[c]) - 1,
                    100 * stats.relative());
      spreads += cell;
    }
    std::snprintf(cell, sizeof cell, "%12s", "mean");
    text += cell + means + "\n";
    std::snprintf(cell, sizeof cell, "%12s", "+-");
    text += cell + spreads + "\n";
  }
  return text;
}

// "exit status 0, 3, terminated by signal 15 (SIGTERM)": each distinct way the runs ended.
std::string ends_text(const ExperimentSummary& summary) {
  std::vector<int> statuses, signals;
  for (const auto& run : summary.runs) {
    auto& seen = run.signal != 0 ? signals : statuses;
    const int value = run.signal != 0 ? run.signal : run.exit_code;
    if (std::find(seen.begin(), seen.end(), value) == seen.end()) seen.push_back(value);
  }
  std::string text;
  for (const int status : statuses) {
    text += text.empty() ? end_text(status, 0) : ", " + std::to_string(status);
  }
  for (const int signal_number : signals) {
    text += (text.empty() ? "" : ", ") + end_text(128 + signal_number, signal_number);
  }
  return text.empty() ? "no run" : text;
}

std::string text_summary(const ExperimentSummary& summary) {
  const std::size_t runs = summary.runs.size();
  std::string text = "\n Performance counter stats for '" + summary.command_line + "'" +
                     (runs > 1 ? " (" + std::to_string(runs) + " runs)" : "") + ":\n\n";
  std::string derived;
  for (const auto& line : summary.lines) {
    const Stats stats = stats_of(line.values);
    char out[512];
    const std::string why = line.not_measured.empty() ? "" : "  (" + line.not_measured + ")";
    if (line.kind == SummaryLine::Kind::event) {
      const std::string name = line.name + (line.group.empty() ? "" : "  [" + line.group + "]");
      if (!line.not_measured.empty()) {
        std::snprintf(out, sizeof out, "%20s  %s", "<not counted>", name.c_str());
        text += out + why + "\n";
        continue;
      }
      if (line.seconds) {
        std::snprintf(out, sizeof out, "%20.6f  %s", stats.mean, name.c_str());
      } else {
        std::snprintf(out, sizeof out, "%20s  %s", grouped(stats.mean).c_str(), name.c_str());
      }
      text += out + spread_text(summary, stats) + "\n";
      continue;
    }
    const std::string shown = !line.counted                ? "not counted"
                              : !line.not_measured.empty() ? "<not counted>"
                              : stats.runs == 0            ? "-"
                                                           : value_text(stats.mean);
    std::snprintf(out, sizeof out, "%20s  %s  (%s: %s)%s", shown.c_str(), line.name.c_str(),
                  line.group.c_str(), line.formula.c_str(), line.note.c_str());
    derived += out + (why.empty() ? spread_text(summary, stats) : why) + "\n";
  }
  if (!derived.empty()) text += "\n" + derived;
  const Stats seconds = stats_of(elapsed(summary));
  char line[96];
  std::snprintf(line, sizeof line, "\n%20.6f  seconds elapsed", seconds.mean);
  text += line + spread_text(summary, seconds) + "; " + ends_text(summary) + "\n";
  if (!summary.stopped.empty()) text += "  " + summary.stopped + "\n";
  if (!summary.note.empty()) text += "  note: " + summary.note + "\n";
  return text + (runs > 1 ? regions_over_runs_text(summary) : regions_text(summary));
}

// A number as JSON and CSV write it: round-trips a double; null (JSON) or empty (CSV) when
// there is none.
std::string number(double value) {
  if (!std::isfinite(value)) return "";
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string row;
  for (const auto& field : fields) row += (row.empty() ? "" : ",") + csv_field(field);
  return row + "\n";
}

std::vector<std::string> stats_fields(const Stats& stats) {
  if (stats.runs == 0) return {"", "", "", "0"};
  return {number(stats.mean), number(stats.stddev), number(stats.relative()),
          std::to_string(stats.runs)};
}

// One table in long form: a row per event, formula, the elapsed time and the exit status (and why
// runs were stopped), then for each region its sum over the runs (kind region_mean, thread "sum")
// and a row per run, thread (or "sum") and column (kind region). The columns region, thread and
// run place a region's rows (empty in the rows before); note says why a row has no value.
std::string csv_summary(const ExperimentSummary& summary) {
  std::string text = csv_row({"kind", "name", "group", "formula", "unit", "mean", "stddev",
                              "relative_stddev", "runs", "region", "thread", "run", "note"});
  auto add_row = [&](std::vector<std::string> fields, const Stats& stats,
                     std::vector<std::string> place) {
    for (auto& field : stats_fields(stats)) fields.push_back(std::move(field));
    fields.insert(fields.end(), place.begin(), place.end());
    text += csv_row(fields);
  };
  for (const auto& line : summary.lines) {
    const bool event = line.kind == SummaryLine::Kind::event;
    add_row({event ? "event" : "metric", line.name, line.group, line.formula,
             line.seconds ? "seconds" : ""},
            stats_of(line.values), {"", "", "", line.not_measured});
  }
  add_row({"elapsed", "seconds elapsed", "", "", "seconds"}, stats_of(elapsed(summary)),
          {"", "", "", ""});
  text +=
      csv_row({"exit_status", "exit status", "", "", "", std::to_string(summary_exit_code(summary)),
               "", "", std::to_string(summary.runs.size()), "", "", "",
               ends_text(summary) + (summary.stopped.empty() ? "" : "; " + summary.stopped)});
  const auto unit_of = [](const std::string& column) {
    return ends_with(column, "seconds") ? "seconds" : "";
  };
  for (const auto& region : regions_over_runs(summary)) {
    for (std::size_t c = 0; c < region.columns.size(); ++c) {
      add_row({"region_mean", region.columns[c], "", "", unit_of(region.columns[c])},
              stats_of(region.values[c]), {region.region, "sum", "", ""});
    }
  }
  for (const auto& table : summary.regions) {
    for (const auto& row : table.rows) {
      for (std::size_t column = 0; column < table.columns.size(); ++column) {
        const std::string& name = table.columns[column];
        const double value = column < row.values.size() ? row.values[column] : std::nan("");
        text += csv_row({"region", name, "", "", unit_of(name), number(value), "", "", "1",
                         table.region, row.thread, std::to_string(table.run), ""});
      }
    }
  }
  return text;
}

std::string json_number(std::optional<double> value) {
  const std::string text = value ? number(*value) : "";
  return text.empty() ? "null" : text;
}

std::string json_stats(const std::vector<std::optional<double>>& values) {
  const Stats stats = stats_of(values);
  std::string text = "\"values\":[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i > 0 ? "," : "") + json_number(values[i]);
  }
  text +=
      "],\"mean\":" + json_number(stats.runs ? std::optional<double>(stats.mean) : std::nullopt);
  text +=
      ",\"stddev\":" + json_number(stats.runs ? std::optional<double>(stats.stddev) : std::nullopt);
  text += ",\"relative_stddev\":" +
          json_number(stats.runs ? std::optional<double>(stats.relative()) : std::nullopt);
  return text;
}

// Each region's sum over its threads, over the runs: per column, each run's value (null where
// the run did not enter it), their mean and spread.
std::string json_region_means(const ExperimentSummary& summary) {
  std::string text;
  for (const auto& region : regions_over_runs(summary)) {
    std::string columns;
    for (std::size_t c = 0; c < region.columns.size(); ++c) {
      columns += std::string(columns.empty() ? "" : ",") +
                 "{\"column\":" + json_string(region.columns[c]) + "," +
                 json_stats(region.values[c]) + "}";
    }
    text += std::string(text.empty() ? "" : ",\n  ") + "{\"region\":" + json_string(region.region) +
            ",\"columns\":[" + columns + "]}";
  }
  return text;
}

std::string json_summary(const ExperimentSummary& summary) {
  std::string events, metrics;
  for (const auto& line : summary.lines) {
    std::string item =
        "{\"name\":" + json_string(line.name) + ",\"group\":" + json_string(line.group) + ",";
    const bool counted = line.counted && line.not_measured.empty();
    const std::string measured = ",\"counted\":" + std::string(counted ? "true" : "false") +
                                 ",\"not_measured\":" + json_string(line.not_measured) + "," +
                                 json_stats(line.values) + "}";
    if (line.kind == SummaryLine::Kind::event) {
      item += "\"unit\":" + json_string(line.seconds ? "seconds" : "") + measured;
      events += (events.empty() ? "" : ",\n  ") + item;
    } else {
      item += "\"formula\":" + json_string(line.formula) + measured;
      metrics += (metrics.empty() ? "" : ",\n  ") + item;
    }
  }
  std::string runs;
  for (const auto& run : summary.runs) {
    runs += std::string(runs.empty() ? "" : ",") +
            "{\"exit_status\":" + std::to_string(run.exit_code) +
            ",\"signal\":" + (run.signal != 0 ? json_string(signal_text(run.signal)) : "null") +
            ",\"end\":" + json_string(end_text(run.exit_code, run.signal)) +
            ",\"seconds\":" + json_number(run.seconds) + "}";
  }
  std::string regions;
  for (const auto& table : summary.regions) {
    std::string columns, rows;
    for (const auto& column : table.columns) {
      columns += (columns.empty() ? "" : ",") + json_string(column);
    }
    for (const auto& row : table.rows) {
      std::string values;
      for (const double value : row.values)
        values += (values.empty() ? "" : ",") + json_number(value);
      rows += std::string(rows.empty() ? "" : ",") + "{\"thread\":" + json_string(row.thread) +
              ",\"values\":[" + values + "]}";
    }
    regions += std::string(regions.empty() ? "" : ",\n  ") +
               "{\"run\":" + std::to_string(table.run) +
               ",\"region\":" + json_string(table.region) + ",\"columns\":[" + columns +
               "],\"rows\":[" + rows + "]}";
  }
  return "{\"command\":" + json_string(summary.command_line) +
         ",\n \"exit_status\":" + std::to_string(summary_exit_code(summary)) +
         ",\n \"stopped\":" + json_string(summary.stopped) + ",\n \"runs\":[" + runs +
         "],\n \"elapsed\":{" + json_stats(elapsed(summary)) + "},\n \"events\":[\n  " + events +
         "],\n \"metrics\":[\n  " + metrics + "],\n \"regions\":[\n  " + regions +
         "],\n \"region_means\":[\n  " + json_region_means(summary) +
         "],\n \"note\":" + json_string(summary.note) + "}\n";
}

}  // namespace

int summary_exit_code(const ExperimentSummary& summary) {
  for (const auto& run : summary.runs) {
    if (run.exit_code != 0) return run.exit_code;
  }
  return summary.stopped_status;
}

std::string format_summary(const ExperimentSummary& summary, SummaryFormat format) {
  switch (format) {
    case SummaryFormat::csv: return csv_summary(summary);
    case SummaryFormat::json: return json_summary(summary);
    case SummaryFormat::text: break;
  }
  return text_summary(summary);
}

}  // namespace hwperf
