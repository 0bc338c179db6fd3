// The steps of the process, in the order run_exporter (exporter/app.cpp) takes them: read what
// the flags and files say, load the topology, check or build, then print once or serve. Each step
// can be read alone; each throws ConfigError for what the user asked for and anything else for
// what the machine could not do, which startup_step turns into the exit code.
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "config/config.h"
#include "config/errors.h"
#include "config/web_config.h"
#include "exporter/app.h"
#include "exporter/cli.h"
#include "exporter/experiment/experiment.h"
#include "exporter/experiment/experiment_run.h"
#include "exporter/privileges.h"
#include "exporter/router.h"
#include "topology/topology.h"
#include "web/admission.h"
#include "web/listen_address.h"

namespace hwperf {

class TlsCertificates;

// The one mapping from a failed startup step to the exit code: ConfigError is what the user
// asked for, anything else what the machine could not do. Logs the failure.
template <typename Step>
ExitCode startup_step(Step&& step) {
  try {
    step();
  } catch (const ConfigError& e) {
    for (const auto& problem : e.problems()) log::error(problem);
    return ExitCode::config_error;
  } catch (const std::exception& e) {
    log::error(e.what());
    return ExitCode::runtime_failure;
  }
  return ExitCode::ok;
}

inline int exit_status(ExitCode exit_code) { return static_cast<int>(exit_code); }

// What the flags and files say, read and checked before anything is built, so that a bad value
// is a configuration error before any counter opens.
struct Startup {
  CliOptions cli;
  Config config;  // the file's, with the flags applied and the command's targets added
  std::optional<ListenAddress> listen_address;
  WebConfigFile web_config;
  std::shared_ptr<TlsCertificates> certificates;  // read once here; the server gets them
  std::optional<RuntimeUser> runtime_user;
};
// For --help, --version and --print-reference only the flags are read.
Startup load_startup(const std::vector<std::string>& args);

// The logging the configuration asks for (quieter in experiment mode without a configuration
// file: experiment_log_level), and no_new_privs before the first thread when root is to be given
// up later, so that every thread has it.
void prepare_process(const Startup& startup);

// The machine as config.topology names it. A live machine that cannot be read is the machine's
// problem; a file or description the user named that cannot be read is a ConfigError.
Topology load_topology(const Config& config);

// --check-config: the checks of the start that cost little, printed with the configuration.
void check_configuration(const Startup& startup, const Topology& topology);

// The serving threads: --web.max-connections, else the server's default.
unsigned worker_threads(const CliOptions& cli);

// Who may ask for what (web/admission.h), whose password hashes are checked here: `serves` says
// which paths exist. The dry run makes it too.
std::shared_ptr<const Admission> make_admission(const Startup& startup,
                                                std::function<bool(std::string_view)> serves);

// Everything a scrape or --once reads, built and started: the command's children (forked
// before any thread exists, each waiting until its counters are open), --once's outputs (opened
// after the fork, so that the command does not inherit them), and every collector, after the
// open-file limit was checked against what they need.
struct Built {
  std::unique_ptr<Exporter> exporter;
  std::vector<std::unique_ptr<Experiment>> experiments;
  SummaryPlan plan;     // --once -- CMD: the groups whose formulas the summary shows
  OnceOutputs outputs;  // --once: where the exposition and the summary go
};
Built build(Startup& startup, const Topology& topology);

// --once: the exposition, or with -- CMD the runs of the command and their summary (run_once).
// Returns the exit status.
int print_once(const Startup& startup, Built& built, const sigset_t& signals);

// Serves until SIGTERM or SIGINT, or with -- CMD until the command has ended and its final
// counts were scraped (serve_command): the HTTP server started, root given up, then the wait and
// a bounded shutdown. Returns the exit status.
int serve(const Startup& startup, Built& built, const sigset_t& signals);

// Experiment mode's view of the exporter (exporter/experiment/experiment_run.h).
class ExporterHost final : public ExperimentHost {
 public:
  explicit ExporterHost(const Exporter& exporter) : exporter_(exporter) {}
  void refresh() const override { exporter_.refresh(); }
  std::vector<prometheus::MetricFamily> gather() const override { return exporter_.gather(); }
  std::uint64_t scrape_mark() const override { return exporter_.scrape_mark(); }
  bool scraped_after(std::uint64_t mark) const override { return exporter_.scraped_after(mark); }

 private:
  const Exporter& exporter_;
};

}  // namespace hwperf
