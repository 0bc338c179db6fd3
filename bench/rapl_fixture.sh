# Sourced by scripts/bench-side-by-side.sh and bench/callgrind-scrapes.sh: the 9-zone powercap
# fixture both measure hwperf on, and hwperf's configuration for it.
#
# node_exporter (procfs/sysfs GetRaplZones) reads class/powercap/intel-rapl:*/{name,energy_uj,
# max_energy_range_uj}; hwperf reads the same three files plus constraint_* for its power
# ceiling. Two packages with core/uncore/dram subzones plus psys: 9 zones, the layout
# bench/bench_support.cpp writes too.

# write_rapl_fixture DIR: DIR/sys (the sysfs root) and DIR/hwperf.yml.
write_rapl_fixture() {
  local sysfs="$1/sys"
  write_zone() {  # dir name energy_uj max_energy_range_uj [power_limit_uw]
    local dir="$sysfs/class/powercap/$1"
    mkdir -p "$dir"
    echo "$2" >"$dir/name"
    echo "$3" >"$dir/energy_uj"
    echo "$4" >"$dir/max_energy_range_uj"
    echo 1 >"$dir/enabled"
    if [[ -n "${5:-}" ]]; then
      echo long_term >"$dir/constraint_0_name"
      echo "$5" >"$dir/constraint_0_power_limit_uw"
    fi
  }
  mkdir -p "$sysfs/class/powercap/intel-rapl"
  echo 1 >"$sysfs/class/powercap/intel-rapl/enabled"
  write_zone intel-rapl:0 package-0 81234567890 261999999939 150000000
  write_zone intel-rapl:0:0 core 51234567890 261999999939
  write_zone intel-rapl:0:1 uncore 1234567890 261999999939
  write_zone intel-rapl:0:2 dram 21234567890 64424509425
  write_zone intel-rapl:1 package-1 82234567890 261999999939 150000000
  write_zone intel-rapl:1:0 core 52234567890 261999999939
  write_zone intel-rapl:1:1 uncore 2234567890 261999999939
  write_zone intel-rapl:1:2 dram 22234567890 64424509425
  write_zone intel-rapl:2 psys 123234567890 261999999939
  # Two packages so that package-0 and package-1 map onto the topology; PAPI off (RAPL only);
  # every other collector as the default configuration has it.
  cat >"$1/hwperf.yml" <<YAML
paths:
  sysfs: $sysfs
topology:
  source: "synthetic:pack:2 core:2 pu:1"
log:
  level: warn
collectors:
  topology:
    enabled: true
  papi:
    enabled: false
  rapl:
    enabled: true
    interface: powercap
YAML
}

# move_rapl_counters DIR: every counter moves once after startup, as on real hardware: one that
# has not moved 5 s after startup is taken for a hypervisor's frozen counter and its joules are
# no longer served (hwperf_rapl_energy_frozen). Rewritten in place, as sysfs changes, since hwperf
# keeps the files open.
move_rapl_counters() {
  local zone
  for zone in "$1"/sys/class/powercap/intel-rapl:*; do
    echo $(($(cat "$zone/energy_uj") + 1000000)) >"$zone/energy_uj"
  done
}
