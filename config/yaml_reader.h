// Reading YAML strictly, for every configuration file this exporter reads (the main
// configuration and --web.config.file): every problem collected with its file:line:column,
// unknown and duplicate keys reported against the keys a mapping has, typed scalar readers.
// Internal to config/: yaml-cpp's headers stay out of everything else.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/enum_names.h"
#include "config/config.h"
#include "config/key_info.h"

namespace hwperf::yaml_reader {

// Collects every problem instead of stopping at the first: a user fixing a config file should
// see all of them in one run.
class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  void add(const YAML::Mark& mark, const std::string& message);
  // An empty value ("key:" with nothing after it) has no position of its own; yaml-cpp marks it
  // where the next token starts. The key is where the user should look.
  YAML::Mark at(const YAML::Node& node) const { return node.IsNull() ? key_mark : node.Mark(); }
  YAML::Mark key_mark;

  SourceMark where(const YAML::Mark& mark) const;
  const std::vector<std::string>& list() const { return problems_; }

  // Describing instead of reading: every Mapping lists its keys into `keys` rather than visiting
  // a document, so the reference is made by the same code that reads the file.
  void describe_into(std::vector<ConfigKeyInfo>* keys) { described_ = keys; }
  // What the key at `path` takes, said only when describing: the reference's last word on a key
  // whose reader's first complaint says less (a number, where it is a number in a range).
  void describe_as(const std::string& path, const std::string& form) {
    if (described_ != nullptr) messages_.push_back(path + ": expected " + form);
  }

 private:
  friend class Mapping;
  std::string file_;
  std::vector<std::string> problems_;
  std::vector<std::string> messages_;  // the same, without file:line:column
  std::vector<ConfigKeyInfo>* described_ = nullptr;
  std::string describing_path_;  // the section being described
};

// Visits the keys of one mapping, reporting unknown, duplicate and non-scalar keys against the
// schema.
class Mapping {
 public:
  using Handler = std::function<void(const YAML::Node& value)>;

  Mapping(Problems& problems, std::string path) : problems_(problems), path_(std::move(path)) {}
  Mapping& on(const std::string& key, Handler handler);
  void visit(const YAML::Node& node);

 private:
  void describe(std::vector<ConfigKeyInfo>& keys);

  Problems& problems_;
  std::string path_;
  std::vector<std::string> keys_;
  std::vector<std::pair<std::string, Handler>> handlers_;
};

bool is_scalar(Problems& problems, const YAML::Node& node, const std::string& path,
               const std::string& expected);
// A scalar's text, with where it was written recorded in `mark`; nullopt, and a problem naming
// `expected`, when the node is not a scalar.
std::optional<std::string> marked_scalar(Problems& problems, const YAML::Node& node,
                                         const std::string& path, const std::string& expected,
                                         SourceMark& mark);
Mapping::Handler read_string(Problems& problems, const std::string& path, std::string& out,
                             SourceMark* mark = nullptr);
Mapping::Handler read_nonempty_string(Problems& problems, const std::string& path,
                                      std::string& out);
Mapping::Handler read_bool(Problems& problems, const std::string& path, bool& out);
// Names and header values are one line of printable text: where `text` holds a control
// character (NUL, CR, LF, ... and DEL; a tab only when `tab_allowed`), which one and at which
// position ("0x00 at position 17"); nullopt when it holds none.
std::optional<std::string> control_character(const std::string& text, bool tab_allowed = false);
Mapping::Handler read_non_negative(Problems& problems, const std::string& path, double& out);

template <typename Enum, std::size_t N>
Mapping::Handler read_enum(Problems& problems, const std::string& path, Enum& out,
                           const EnumName<Enum> (&table)[N]) {
  return [&problems, path, &out, &table](const YAML::Node& node) {
    const std::string expected = "one of " + join_names(table);
    if (!is_scalar(problems, node, path, expected)) return;
    const auto text = node.as<std::string>();
    if (const auto value = parse_name(table, text)) {
      out = *value;
      return;
    }
    problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
  };
}

}  // namespace hwperf::yaml_reader
