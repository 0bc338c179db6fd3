// What experiment mode (`hwperf_exporter [--once] -- CMD`) is told on the command line: the
// flags of exporter/cli.h that are its own. CliOptions is made of these and the process's other
// flags, so that experiment mode reads its flags without knowing the rest of the command line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"

namespace hwperf {

// How the summary of `--once -- CMD` is written (--summary.format), on stderr or to
// --summary.output: perf-stat-like text for a person, CSV or JSON for a notebook.
enum class SummaryFormat { text, csv, json };
inline constexpr EnumName<SummaryFormat> kSummaryFormatNames[] = {
    {SummaryFormat::text, "text"}, {SummaryFormat::csv, "csv"}, {SummaryFormat::json, "json"}};

struct ExperimentOptions {
  // After `--`: a command to run as a process target (experiment mode).
  std::vector<std::string> command;
  std::optional<std::string> output;           // --once: where the exposition goes ("-": stdout)
  std::optional<std::string> summary_output;   // --once -- CMD: the summary's file ("-": stdout)
  std::optional<std::string> experiment_name;  // -- CMD: the target's name
  SummaryFormat summary_format = SummaryFormat::text;
  unsigned repeat = 1;              // --once -- CMD: runs of the command
  unsigned linger_ms = 30 * 1000;   // served -- CMD: how long the final counts wait for a scrape
  bool experiment_regions = false;  // -- CMD: marker library preloaded, region segment passed
};

}  // namespace hwperf
