# Sourced by the scripts that fetch from Debian: prints the Debian mirror this machine's apt
# already uses (deb822 .sources first, then sources.list), so no script names a mirror of its own.
debian_mirror() {
  local mirror
  mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
           grep -v security | head -n1)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 !~ /security/ {print $2; exit}' \
                                 /etc/apt/sources.list 2>/dev/null)
  [ -n "$mirror" ] || { echo "no Debian mirror found in the apt sources" >&2; return 1; }
  echo "$mirror"
}
