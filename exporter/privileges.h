// --runtime.user: give up root once every counter is open. Every descriptor the collectors read
// (perf events, powercap energy_uj, /dev/cpu/N/msr) is opened at startup and read through that
// descriptor afterwards, and the kernel checks permissions at open, not at read
// (msr.c msr_open checks CAP_SYS_RAWIO; energy_uj's 0400 mode is checked at open; perf_event's
// paranoid and CAP_PERFMON checks are in perf_event_open), so reads keep working after the drop.
#pragma once

#include <string>
#include <sys/types.h>

namespace hwperf {

struct RuntimeUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
};

// Looks the user up (a name from the user database, or a numeric uid). Throws ConfigError naming
// the user when it does not exist.
RuntimeUser resolve_runtime_user(const std::string& name_or_uid);

// Sets no_new_privs on the calling thread, which every thread it starts afterwards inherits (the
// flag is per thread: set later, the threads already running would lack it). Throws
// std::runtime_error naming errno.
void forbid_new_privileges();

// Switches every thread of the process to `user` (real, effective and saved ids; supplementary
// groups to the user's primary group only) with no capabilities left, and sets no_new_privs so
// that nothing can regain them. A process already running as `user` (all its ids) has nothing
// to switch, and one that is neither root nor `user` cannot: that throws. Throws std::runtime_error
// naming the step and errno; the caller must then stop, as the process may be half switched.
void drop_privileges(const RuntimeUser& user);

}  // namespace hwperf
