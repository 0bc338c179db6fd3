#include "exporter/privileges.h"

#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/text.h"
#include "config/errors.h"

namespace hwperf {
namespace {

[[noreturn]] void fail(const std::string& step, int error) {
  throw std::runtime_error("--runtime.user: " + step + " failed: " + errno_text(error));
}

}  // namespace

RuntimeUser resolve_runtime_user(const std::string& name_or_uid) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  int rc = getpwnam_r(name_or_uid.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (found == nullptr) {
    if (const auto uid = parse_u64(name_or_uid); uid && *uid < 0xFFFFFFFFu) {
      rc = getpwuid_r(static_cast<uid_t>(*uid), &entry, buffer.data(), buffer.size(), &found);
    }
  }
  if (found == nullptr) {
    throw ConfigError({"--runtime.user=" + name_or_uid + ": no such user" +
                       (rc != 0 ? " (" + errno_text(rc) + ")" : std::string()) +
                       "; name a user from the user database (e.g. nobody) or a numeric uid "
                       "that has one"});
  }
  return {found->pw_uid, found->pw_gid, found->pw_name};
}

void forbid_new_privileges() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("prctl(PR_SET_NO_NEW_PRIVS)", errno);
}

void drop_privileges(const RuntimeUser& user) {
  uid_t real_uid = 0, effective_uid = 0, saved_uid = 0;
  gid_t real_gid = 0, effective_gid = 0, saved_gid = 0;
  getresuid(&real_uid, &effective_uid, &saved_uid);
  getresgid(&real_gid, &effective_gid, &saved_gid);
  const bool already_user = real_uid == user.uid && effective_uid == user.uid &&
                            saved_uid == user.uid && real_gid == user.gid &&
                            effective_gid == user.gid && saved_gid == user.gid;
  // Started as the user already (a systemd User=, a container's USER): its groups are whatever
  // started it, and only root could change them.
  if (!already_user) {
    if (effective_uid != 0) {
      throw std::runtime_error("--runtime.user=" + user.name + ": the exporter runs as uid " +
                               std::to_string(effective_uid) + ", which cannot switch to " +
                               user.name + " (uid " + std::to_string(user.uid) +
                               "); start it as root or as " + user.name);
    }
    // Groups first: once the uid is not 0 the process may no longer change them.
    const gid_t groups[] = {user.gid};
    if (setgroups(1, groups) != 0) fail("setgroups", errno);
    // glibc applies set*id to every thread of the process (its setxid broadcast), so the PAPI
    // owner threads, the RAPL guard and CivetWeb's threads change too; the kernel clears the
    // capabilities of each thread whose uids all leave 0 (capabilities(7), "Effect of user ID
    // changes on capabilities").
    if (setresgid(user.gid, user.gid, user.gid) != 0) fail("setresgid", errno);
    if (setresuid(user.uid, user.uid, user.uid) != 0) fail("setresuid", errno);
  }
  if (user.uid != 0) {
    // A uid of 0 cannot be left and come back: check that the switch took.
    if (setresuid(0, 0, 0) == 0) fail("giving up uid 0 (it could be regained)", EPERM);
  }
  forbid_new_privileges();
  // The bounding set can only be lowered with CAP_SETPCAP, gone by now; with no permitted
  // capabilities and no_new_privs nothing can be regained, which is what matters.
}

}  // namespace hwperf
