# Sourced by the scripts that install Debian packages, so that each finds the package database
# in a state apt can use. A dpkg killed mid-run (a CI job stopped while a man-db trigger ran) leaves
# it "interrupted", and every later apt-get install fails with "dpkg was interrupted, you must
# manually run 'dpkg --configure -a'": one stopped run would fail every run after it on that machine.

apt_sudo=""
[ "$(id -u)" -eq 0 ] || apt_sudo=sudo

# Finishes what an interrupted dpkg left half done; waits for another apt or dpkg to let go of
# the lock rather than failing beside it (unattended-upgrades on a fresh machine).
apt_recover() {
  if [ -n "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ] || [ -n "$(dpkg --audit 2>/dev/null)" ]; then
    echo "apt.sh: dpkg was interrupted earlier; finishing it with dpkg --configure -a" >&2
    $apt_sudo env DEBIAN_FRONTEND=noninteractive dpkg --force-confold --configure -a >/dev/null
  fi
}

# apt_install PACKAGE...: installs without recommends, after reading the package lists (a machine
# whose lists are stale or empty would otherwise not find the package).
apt_install() {
  apt_recover
  $apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq
  $apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "$@" >/dev/null
}
