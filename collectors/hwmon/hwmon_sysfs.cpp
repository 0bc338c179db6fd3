#include "collectors/hwmon/hwmon_sysfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <map>
#include <utility>

#include "common/text.h"

namespace hwperf::hwmon {
namespace {

// A directory below `parent`, following a link (the class entries are links into /sys/devices;
// the kernel ends a loop with ELOOP after 40 links). O_NONBLOCK: a FIFO in its place fails with
// ENOTDIR rather than waiting for a writer.
OrErrno<UniqueFd> open_directory_at(int parent, const std::string& name) {
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return {UniqueFd(), errno};
  return {std::move(fd), 0};
}

// An attribute below `directory`: never through a link (sysfs attributes are none; ELOOP), only a
// regular file (ENOTSUP), without blocking.
OrErrno<UniqueFd> open_attribute_at(int directory, const std::string& name) {
  UniqueFd fd(::openat(directory, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
  if (!fd.valid()) return {UniqueFd(), errno};
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return {UniqueFd(), errno};
  if (!S_ISREG(info.st_mode)) return {UniqueFd(), ENOTSUP};
  return {std::move(fd), 0};
}

// What read(2) returns at `offset`, retried on EINTR.
ssize_t pread_retrying(int fd, char* buffer, std::size_t size, off_t offset) {
  ssize_t n = 0;
  do {
    n = ::pread(fd, buffer, size, offset);
  } while (n < 0 && errno == EINTR);
  return n;
}

// A text attribute, whole: EFBIG past kMaxTextBytes.
OrErrno<std::string> read_text_at(int directory, const std::string& name) {
  auto opened = open_attribute_at(directory, name);
  if (!opened.ok()) return {{}, opened.error};
  std::string text;
  char buffer[1024];
  while (true) {
    const ssize_t n =
        pread_retrying(opened.value.get(), buffer, sizeof buffer, static_cast<off_t>(text.size()));
    if (n < 0) return {{}, errno};
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxTextBytes) return {{}, EFBIG};
  }
  return {std::move(text), 0};
}

// One number: a sysfs attribute makes its whole text on the read at offset 0. A read that fills
// the buffer is no number hwmon prints.
OrErrno<std::int64_t> read_number_at(int directory, const std::string& name) {
  auto opened = open_attribute_at(directory, name);
  if (!opened.ok()) return {0, opened.error};
  char buffer[64];
  const ssize_t n = pread_retrying(opened.value.get(), buffer, sizeof buffer, 0);
  if (n < 0) return {0, errno};
  if (n == static_cast<ssize_t>(sizeof buffer)) return {0, EINVAL};
  const auto value = parse_reading(std::string_view(buffer, static_cast<std::size_t>(n)));
  if (!value) return {0, EINVAL};
  return {*value, 0};
}

// Whether `name` exists below `directory`, whatever it is (not followed).
bool exists_at(int directory, const std::string& name) {
  struct stat info {};
  return directory >= 0 && ::fstatat(directory, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0;
}

// The last part of the link `name` points to ("../../../ACPI000D:00" -> "ACPI000D:00").
std::string link_target_name(int directory, const std::string& name) {
  char buffer[4096];
  const ssize_t n = ::readlinkat(directory, name.c_str(), buffer, sizeof buffer);
  if (n <= 0 || n == static_cast<ssize_t>(sizeof buffer)) return "";
  std::string target(buffer, static_cast<std::size_t>(n));
  while (!target.empty() && target.back() == '/') target.pop_back();
  return target.substr(target.find_last_of('/') + 1);
}

// Printable ASCII of `text`, trimmed, at most kMaxLabelLength: labels become label values.
std::string clean_label(std::string_view text) {
  std::string out;
  for (const char c : trim(text)) {
    if (out.size() == kMaxLabelLength) break;
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

// "hwmon10" after "hwmon9": by number.
bool entry_before(const std::string& a, const std::string& b) {
  const auto number = [](const std::string& s) {
    const auto digits = s.find_first_of("0123456789");
    const auto value = digits == std::string::npos ? std::nullopt : parse_u64(s.substr(digits));
    return value.value_or(std::numeric_limits<std::uint64_t>::max());
  };
  const auto na = number(a);
  const auto nb = number(b);
  return na != nb ? na < nb : a < b;
}

// The kernel names the class entries hwmon<N> (hwmon.c: HWMON_ID_FORMAT "hwmon%d").
bool chip_entry(const std::string& name) {
  return name.size() > 5 && name.compare(0, 5, "hwmon") == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

// The chip entries of `directory`: of its first kMaxDirectoryEntries names, those named as the
// kernel names chips, the kMaxChipEntries lowest numbered.
std::vector<std::string> list_chip_entries(int directory) {
  std::vector<std::string> names;
  const int copy = ::dup(directory);
  if (copy < 0) return names;
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return names;
  }
  for (std::size_t seen = 0; seen < kMaxDirectoryEntries; ++seen) {
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) break;
    if (chip_entry(entry->d_name)) names.emplace_back(entry->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end(), entry_before);
  if (names.size() > kMaxChipEntries) names.resize(kMaxChipEntries);
  return names;
}

// Why an attribute or directory was not read, as a user can act on it.
std::string refusal(int error) {
  switch (error) {
    case ENOTSUP: return "not a regular file (a FIFO, socket or device; " + errno_text(error) + ")";
    case ELOOP:
      return "a link where an attribute is, or a loop of links (" + errno_text(error) + ")";
    case EFBIG: return "larger than a sysfs attribute can be (" + errno_text(error) + ")";
    default: return errno_text(error);
  }
}

}  // namespace

std::optional<std::int64_t> parse_reading(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  const auto end = text.find_first_not_of("0123456789");
  const std::string_view digits = text.substr(0, end);
  if (digits.empty() || digits.size() > 19) return std::nullopt;
  if (end != std::string_view::npos &&
      text.find_first_not_of(" \t\r\n", end) != std::string_view::npos) {
    return std::nullopt;
  }
  const auto magnitude = parse_u64(digits);
  const auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (!magnitude || *magnitude > limit + (negative ? 1 : 0)) return std::nullopt;
  if (!negative) return static_cast<std::int64_t>(*magnitude);
  if (*magnitude == limit + 1) return std::numeric_limits<std::int64_t>::min();
  return -static_cast<std::int64_t>(*magnitude);
}

namespace {

// One hwmon chip: its class entry and the two directories its attributes may be in.
struct Chip {
  std::string entry;                       // "hwmon3"
  std::string path;                        // "<sysfs>/class/hwmon/hwmon3"
  std::string name;                        // its name attribute
  std::shared_ptr<const UniqueFd> own;     // the hwmon device
  std::shared_ptr<const UniqueFd> device;  // the device it belongs to, when there is one
};

// Where `attribute` is: on the hwmon device itself, or on its device ("Up to lm-sensors 3.0.0,
// libsensors looks for hardware monitoring attributes in the 'physical' device directory",
// Documentation/hwmon/sysfs-interface.rst; acpi_power_meter.c still puts them there). nullptr
// when in neither; `relative` is its path below the chip's.
const std::shared_ptr<const UniqueFd>* locate(const Chip& chip, const std::string& attribute,
                                              std::string& relative) {
  if (exists_at(chip.own->get(), attribute)) {
    relative = attribute;
    return &chip.own;
  }
  if (chip.device && exists_at(chip.device->get(), attribute)) {
    relative = "device/" + attribute;
    return &chip.device;
  }
  return nullptr;
}

// A text attribute of the chip; `problem` says what could not be read, with its path.
OrErrno<std::string> read_chip_text(const Chip& chip, const std::string& attribute,
                                    std::string& problem) {
  std::string relative;
  const auto* directory = locate(chip, attribute, relative);
  if (directory == nullptr) return {{}, ENOENT};
  auto text = read_text_at((*directory)->get(), attribute);
  if (!text.ok()) problem = chip.path + "/" + relative + ": " + refusal(text.error);
  return text;
}

// The label of `channel`, when the chip has one: "" when absent, nothing when unreadable.
std::optional<std::string> channel_label(const Chip& chip, const MeterChip& meter, unsigned channel,
                                         std::string& problem) {
  if (meter.label == nullptr) return std::string();
  const auto text = read_chip_text(chip, channel_attribute(meter.label, channel), problem);
  if (text.ok()) return clean_label(text.value);
  if (text.error == ENOENT) return std::string();
  return std::nullopt;
}

// power#_average_interval in seconds; 0 when the chip gives none.
double average_interval(const Chip& chip, const MeterChip& meter, unsigned channel) {
  if (meter.average_interval == nullptr) return 0;
  std::string relative;
  const std::string attribute = channel_attribute(meter.average_interval, channel);
  const auto* directory = locate(chip, attribute, relative);
  if (directory == nullptr) return 0;
  const auto milliseconds = read_number_at((*directory)->get(), attribute);
  return milliseconds.ok() && milliseconds.value > 0 ? static_cast<double>(milliseconds.value) / 1e3
                                                     : 0;
}

void add_channel(const Chip& chip, const MeterChip& meter, unsigned channel,
                 const std::string& chip_id, int numa_node, Discovery& out) {
  const std::string attribute = channel_attribute(meter.attribute, channel);
  std::string relative;
  const auto* directory = locate(chip, attribute, relative);
  if (directory == nullptr) return;
  const std::string path = chip.path + "/" + relative;
  if (const auto probe = open_attribute_at((*directory)->get(), attribute); !probe.ok()) {
    out.refused.push_back(path + ": " + refusal(probe.error));
    return;
  }
  std::string problem;
  const auto label = channel_label(chip, meter, channel, problem);
  if (!label) {
    out.refused.push_back(problem + " (" + attribute + " not read)");
    return;
  }
  const auto classification = classify(meter, channel, *label);
  if (!classification) {
    out.ignored.push_back(path + ": " + meter.name + " channel " + std::to_string(channel) +
                          (label->empty() ? "" : " \"" + *label + "\"") +
                          " measures nothing this collector exports (not read)");
    return;
  }
  FoundSensor found;
  found.spec.chip = chip_id;
  found.spec.sensor = attribute.substr(0, attribute.find('_'));
  found.spec.name = chip.name;
  found.spec.label = *label;
  found.spec.kind = classification->kind;
  found.spec.source = meter.source;
  found.spec.path = path;
  found.spec.average_interval_seconds = average_interval(chip, meter, channel);
  found.socket = classification->socket;
  found.numa_node = numa_node;
  found.directory = *directory;
  found.attribute = attribute;
  found.entry = chip.entry;
  out.sensors.push_back(std::move(found));
}

void discover_chip(int class_directory, const std::string& class_path, const std::string& entry,
                   Discovery& out) {
  Chip chip;
  chip.entry = entry;
  chip.path = class_path + "/" + entry;
  auto own = open_directory_at(class_directory, entry);
  if (!own.ok()) {
    out.refused.push_back(chip.path + ": " + refusal(own.error));
    return;
  }
  chip.own = std::make_shared<const UniqueFd>(std::move(own.value));
  if (auto device = open_directory_at(chip.own->get(), "device"); device.ok()) {
    chip.device = std::make_shared<const UniqueFd>(std::move(device.value));
  } else if (device.error != ENOENT) {
    out.refused.push_back(chip.path + "/device: " + refusal(device.error));
  }
  std::string problem;
  const auto name = read_chip_text(chip, "name", problem);
  if (!name.ok()) {
    out.chips.push_back(entry + " (no name)");
    if (name.error != ENOENT) out.refused.push_back(problem);
    return;
  }
  chip.name = clean_label(name.value);
  out.chips.push_back(entry + " (" + chip.name + ")");
  const MeterChip* meter = find_meter_chip(chip.name);
  if (meter == nullptr) return;
  std::string chip_id = clean_label(link_target_name(chip.own->get(), "device"));
  if (chip_id.empty()) chip_id = entry;
  int numa_node = -1;
  if (chip.device) {
    const auto node = read_number_at(chip.device->get(), "numa_node");
    if (node.ok() && node.value >= 0 && node.value <= std::numeric_limits<int>::max()) {
      numa_node = static_cast<int>(node.value);
    }
  }
  for (unsigned channel = 1; channel <= kMaxChannels; ++channel) {
    add_channel(chip, *meter, channel, chip_id, numa_node, out);
  }
}

class SysfsSource final : public SensorSource {
 public:
  explicit SysfsSource(std::vector<FoundSensor> found) : found_(std::move(found)) {
    for (const auto& sensor : found_) specs_.push_back(sensor.spec);
  }
  const std::vector<SensorSpec>& sensors() const override { return specs_; }
  OrErrno<std::int64_t> read(std::size_t index) override {
    const FoundSensor& sensor = found_.at(index);
    return read_number_at(sensor.directory->get(), sensor.attribute);
  }

 private:
  std::vector<FoundSensor> found_;
  std::vector<SensorSpec> specs_;
};

}  // namespace

Discovery discover_meters(const std::string& sysfs_root) {
  Discovery out;
  const std::string class_path = sysfs_root + "/class/hwmon";
  UniqueFd class_directory(
      ::open(class_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK));
  if (!class_directory.valid()) {
    if (errno != ENOENT) out.refused.push_back(class_path + ": " + refusal(errno));
    return out;
  }
  for (const auto& entry : list_chip_entries(class_directory.get())) {
    discover_chip(class_directory.get(), class_path, entry, out);
  }
  std::map<std::pair<std::string, std::string>, int> uses;
  for (const auto& sensor : out.sensors) ++uses[{sensor.spec.chip, sensor.spec.sensor}];
  for (auto& sensor : out.sensors) {
    if (uses[{sensor.spec.chip, sensor.spec.sensor}] > 1) {
      sensor.spec.chip += "/" + sensor.entry;
    }
  }
  return out;
}

std::unique_ptr<SensorSource> make_sysfs_source(std::vector<FoundSensor> sensors) {
  return std::make_unique<SysfsSource>(std::move(sensors));
}

}  // namespace hwperf::hwmon
