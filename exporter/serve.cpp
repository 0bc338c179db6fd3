// The startup's last steps (exporter/startup.h): --once, or serving until a stop signal.
#include <chrono>
#include <cstdlib>
#include <system_error>
#include <thread>

#include "common/text.h"
#include "exporter/startup.h"
#include "web/http_server.h"
#include "web/tls.h"

namespace hwperf {
namespace {

// Serving without a command: until SIGTERM or SIGINT.
void wait_for_stop(const sigset_t& signals) {
  while (true) {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (signal_number == SIGCHLD) continue;
    if (signal_number == SIGTERM || signal_number == SIGINT) {
      log::info("received " + signal_text(signal_number) + ", shutting down");
      return;
    }
    log::info("received " + signal_text(signal_number) +
              ", ignored (only SIGTERM and SIGINT stop the exporter; the configuration is read "
              "at startup only)");
  }
}

// Served -- CMD: lets the command run; nothing once it does, else the status to exit with, as a
// shell gives it (127 not found, 126 not executable, 128+N when it was killed while it waited).
std::optional<int> release_command(Experiment& experiment) {
  bool started = false;
  if (startup_step([&] { started = experiment.release(); }) != ExitCode::ok) {
    return experiment.wait();
  }
  if (!started) {
    log::error(experiment.command_line() + " ended before it started (" +
               end_text(experiment.wait(), experiment.end_signal()) + ")");
    return experiment.wait();
  }
  return std::nullopt;
}

// The HTTP server, bound and started in front of the exporter's routes, behind the admission
// layer. With --runtime.user it accepts nothing until give_up_root has run.
std::unique_ptr<HttpServer> start_server(const Startup& startup, const Exporter& exporter,
                                         HttpServerOptions& options) {
  const CliOptions& cli = startup.cli;
  options.listen_address = *startup.listen_address;
  options.worker_threads = worker_threads(cli);
  if (cli.request_timeout_ms) options.request_timeout_ms = *cli.request_timeout_ms;
  if (cli.keep_alive_timeout_ms) options.keep_alive_timeout_ms = *cli.keep_alive_timeout_ms;
  options.tls = startup.web_config.tls;
  options.certificates = startup.certificates;
  options.response_headers = startup.web_config.http.headers;
  // Held until the drop below: no request is read while the process is root.
  options.accept_later = startup.runtime_user.has_value();
  const Exporter* routes = &exporter;
  options.admission =
      make_admission(startup, [routes](std::string_view path) { return routes->serves(path); });
  return std::make_unique<HttpServer>(
      options, [routes](const HttpRequest& request) { return routes->route(request); });
}

// Every counter is open and the port is bound: nothing left needs root. Reads go through
// descriptors opened already, which the kernel checked at open (exporter/privileges.h).
void give_up_root(const RuntimeUser& user, HttpServer& server) {
  drop_privileges(user);
  if (user.uid == 0) {
    log::warn("running as " + user.name +
              " (uid 0) with every capability root has; name an unprivileged user in "
              "--runtime.user (e.g. nobody) to give them up");
  } else {
    log::info("running as " + user.name + " (uid " + std::to_string(user.uid) +
              ") with no capabilities");
  }
  server.accept_connections();
}

void log_serving(const Startup& startup, const HttpServer& server,
                 const HttpServerOptions& options) {
  const unsigned scrapes = options.admission->policy().max_concurrent_requests;
  log::info("HTTP: " + std::to_string(server.worker_threads()) + " connections served at once, " +
            std::to_string(server.connection_queue()) + " more queued; request deadline " +
            format_number(options.request_timeout_ms / 1000.0) + " s, keep-alive " +
            format_number(options.keep_alive_timeout_ms / 1000.0) + " s; " +
            (scrapes == 0 ? std::string("no limit on concurrent scrapes")
                          : std::to_string(scrapes) + " scrapes at once, 503 beyond"));
  const WebConfigFile& web = startup.web_config;
  log::info("Listening on " + server.bound_address() + " (metrics at " +
            startup.config.web.telemetry_path + ")" +
            (web.tls ? ", HTTPS only: " + describe_tls(*web.tls) : "") +
            (web.basic_auth_users.empty() ? "" : ", basic authentication required"));
}

// Whatever a worker or collector is doing (a client CivetWeb still waits on, a read stuck in
// the kernel), the process ends within this deadline of the signal; a clean stop takes well
// under a second.
void bound_shutdown(int exit_status) {
  try {
    std::thread([exit_status] {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      log::warn("shutdown did not finish within 3 s; exiting without waiting for the rest");
      std::_Exit(exit_status);
    }).detach();
  } catch (const std::system_error&) {
    // No thread to spare: the stop is then not bounded, but still happens.
  }
}

}  // namespace

int print_once(const Startup& startup, Built& built, const sigset_t& signals) {
  if (!built.experiments.empty()) {
    const ExporterHost host(*built.exporter);
    const OnceResult result =
        run_once(built.experiments, host, built.plan, startup.cli, signals, built.outputs);
    return result.status == 0 && !result.written ? exit_status(ExitCode::runtime_failure)
                                                 : result.status;
  }
  const std::string text = serialize(built.exporter->gather(), ExpositionFormat::text_0_0_4);
  return exit_status(write_and_close(*built.outputs.exposition, text) ? ExitCode::ok
                                                                      : ExitCode::runtime_failure);
}

int serve(const Startup& startup, Built& built, const sigset_t& signals) {
  Experiment* experiment = built.experiments.empty() ? nullptr : built.experiments.front().get();
  if (experiment) {
    if (const auto status = release_command(*experiment)) return *status;
    built.exporter->refresh();  // executed: the collectors see the command's name now
  }
  std::unique_ptr<HttpServer> server;
  HttpServerOptions options;
  if (const auto failed =
          startup_step([&] { server = start_server(startup, *built.exporter, options); });
      failed != ExitCode::ok) {
    return exit_status(failed);
  }
  if (startup.runtime_user) {
    if (const auto failed = startup_step([&] { give_up_root(*startup.runtime_user, *server); });
        failed != ExitCode::ok) {
      return exit_status(failed);
    }
  }
  log_serving(startup, *server, options);
  int status = exit_status(ExitCode::ok);
  if (experiment) {
    const ExporterHost host(*built.exporter);
    status = serve_command(*experiment, host, signals, startup.cli.linger_ms,
                           startup.config.web.telemetry_path);
  } else {
    wait_for_stop(signals);
  }
  bound_shutdown(status);
  server.reset();
  built.exporter.reset();
  return status;
}

}  // namespace hwperf
