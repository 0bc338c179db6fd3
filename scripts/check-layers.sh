#!/usr/bin/env bash
# Fails when an #include crosses the layers upward (docs/development.md, Layout):
#   common <- config, topology <- collectors/events (with collectors/metrics.h, exposition_text.h
#   and prepared_family.h)
#   <- collectors/perf <- collectors/region <- collectors/<name>/ <- collectors/ (registry, collector_set)
#   <- exporter/, with web/ beside the collectors.
# The events layer includes no other collector folder; perf/ (and its BPF engine, perf/bpf/)
# includes only events/; region/ (the marker library's segments, which process targets export)
# only events/ and perf/; a collector's folder includes events/, perf/ and the Collector
# interface, never another collector's folder, the registry or the collector set, nor exporter/
# or web/; exporter/, web/, config/, common/ and topology/ never name a collector's folder (they
# reach collectors through the registry); web/ includes neither exporter/ nor collectors/.
# Inside exporter/ the products sit below the process (main, startup, cli, routes):
# compression/ includes nothing else of exporter/, topology_page/ only compression/, experiment/
# nothing else of exporter/. markers/ (a C library programs load) includes libc, the kernel's
# headers and its own files only.
#
# Every include is checked where it resolves, as the compiler resolves it (next to the including
# file first, then from the project root, or markers/include and markers/src for markers/): a
# relative include ("../cgroup/identity.h") is held to the rules of the folder it reaches.
set -euo pipefail
cd "$(dirname "$0")/.."
code_folders=(collectors exporter web config common topology markers)
found=0
report() {
  echo "check-layers: $1" >&2
  found=1
}

# One line per include of the code folders: FILE:LINE:TEXT<TAB>RESOLVED, TEXT the line as written
# and RESOLVED the project path it names ("<libc>" for a system header, "<system>" for another
# one), so that a rule reads RESOLVED and a report names the line.
resolved_includes() {
  {
    find "${code_folders[@]}" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.c' \) -printf 'FILE %p\n'
    grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "${code_folders[@]}" \
      --include='*.h' --include='*.cpp' --include='*.c' || true
  } | awk -v libc="$libc_headers" '
    BEGIN { n = split(libc, names, " "); for (i = 1; i <= n; ++i) is_libc[names[i]] = 1 }
    /^FILE / { exists[substr($0, 6)] = 1; next }
    function normalise(path,    parts, n, i, out, kept, k) {
      n = split(path, parts, "/"); k = 0
      for (i = 1; i <= n; ++i) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == "..") { if (k > 0) --k; else kept[++k] = ".."; continue }
        kept[++k] = parts[i]
      }
      out = ""; for (i = 1; i <= k; ++i) out = out (i > 1 ? "/" : "") kept[i]
      return out
    }
    {
      first = index($0, ":"); rest = substr($0, first + 1); second = index(rest, ":")
      file = substr($0, 1, first - 1); text = substr(rest, second + 1)
      quoted = match(text, /"[^"]*"/)
      if (quoted) name = substr(text, RSTART + 1, RLENGTH - 2)
      else { match(text, /<[^>]*>/); name = substr(text, RSTART + 1, RLENGTH - 2) }
      dir = file; sub(/\/[^\/]*$/, "", dir)
      resolved = ""
      if (quoted && normalise(dir "/" name) in exists) {
        resolved = normalise(dir "/" name)
      } else if (file ~ /^markers\//) {
        if (("markers/include/" name) in exists) resolved = "markers/include/" name
        else if (("markers/src/" name) in exists) resolved = "markers/src/" name
      } else if (normalise(name) in exists || name ~ /^(collectors|exporter|web|config|common|topology|markers)\//) {
        resolved = normalise(name)
      }
      if (resolved == "") resolved = (!quoted && (name in is_libc || name ~ /^(sys|linux|asm|asm-generic|bits|netinet|arpa|net)\//)) ? "<libc>" : (quoted ? "<missing>" : "<system>")
      printf "%s\t%s\n", file ":" substr(rest, 1, second - 1) ":" text, resolved
    }'
}

# The C library's headers (C11 and POSIX as glibc provides them) and the kernel's own (sys/,
# linux/, asm/ and the socket ones above): all a marker library may include from the system.
libc_headers="assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h
locale.h math.h setjmp.h signal.h stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h
stdio.h stdlib.h stdnoreturn.h string.h tgmath.h threads.h time.h uchar.h wchar.h wctype.h
aio.h dirent.h dlfcn.h elf.h endian.h fcntl.h fnmatch.h features.h glob.h grp.h iconv.h
langinfo.h libgen.h link.h malloc.h netdb.h poll.h pthread.h pwd.h regex.h sched.h search.h
semaphore.h spawn.h strings.h syslog.h termios.h ucontext.h unistd.h utime.h wordexp.h
byteswap.h"
libc_headers=$(tr '\n' ' ' <<<"$libc_headers")
includes=$(resolved_includes)

# hits FILE_REGEX RESOLVED_REGEX [ALLOWED_REGEX]: the includes of files matching FILE_REGEX that
# resolve to a path matching RESOLVED_REGEX and not ALLOWED_REGEX, as FILE:LINE:TEXT.
hits() {
  awk -F'\t' -v files="$1" -v target="$2" -v allowed="${3:-^$}" '
    { split($1, at, ":") }
    at[1] ~ files && $2 ~ target && $2 !~ allowed { print $1 }' <<<"$includes"
}
rule() {  # reason FILE_REGEX RESOLVED_REGEX [ALLOWED_REGEX]
  local reason=$1
  shift
  while IFS= read -r hit; do [[ -z "$hit" ]] || report "$hit ($reason)"; done < <(hits "$@")
}

layer_headers='collectors/(metrics|exposition_text|prepared_family)\.h$'
rule "a collector includes a layer above it" '^collectors/[^/]+/' \
  '^collectors/(registry|collector_set)\.h$'
rule "collectors/ includes the exporter or the server" '^collectors/' '^(exporter|web)/'
rule "the events layer includes a layer above it" \
  '^collectors/(events/|(metrics|exposition_text|prepared_family)\.)' '^collectors/' \
  "^collectors/events/|$layer_headers"
rule "perf/ includes a collector's folder" '^collectors/perf/' '^collectors/' \
  "^collectors/(events|perf)/|$layer_headers"
rule "region/ includes a collector's folder" '^collectors/region/' '^collectors/' \
  "^collectors/(events|perf|region)/|$layer_headers"
for folder in collectors/*/; do
  name=$(basename "$folder")
  case "$name" in events | perf | region) continue ;; esac
  rule "includes another collector's folder" "^collectors/${name}/" '^collectors/' \
    "^collectors/(${name}|events|perf|region)/|^collectors/(metrics|exposition_text|prepared_family|collector|collector_entry)\\.h$"
done
rule "names a collector's folder" '^(exporter|web|config|common|topology)/' '^collectors/[^/]+/'
rule "a lower layer includes a higher one" '^(config|common|topology)/' '^(collectors|exporter|web)/'
rule "web/ includes the exporter or a collector, which sit above and beside it" '^web/' \
  '^(exporter|collectors)/'
rule "compression/ includes the rest of the exporter" '^exporter/compression/' '^exporter/' \
  '^exporter/compression/'
rule "the topology page includes the exporter above it" '^exporter/topology_page/' '^exporter/' \
  '^exporter/(topology_page|compression)/'
rule "experiment mode includes the exporter above it" '^exporter/experiment/' '^exporter/' \
  '^exporter/experiment/'
rule "markers/ includes what is not libc, the kernel's headers or its own" '^markers/' '.' \
  '^(<libc>|markers/)'
[ "$found" -eq 0 ] || exit 1
echo "check-layers: no include crosses the layers upward"
