#include "config/yaml_reader.h"

#include <cstdio>

#include <cmath>
#include <set>
#include <stdexcept>

#include "common/text.h"

namespace hwperf::yaml_reader {

void Problems::add(const YAML::Mark& mark, const std::string& message) {
  problems_.push_back(where(mark).to_string() + ": " + message);
  messages_.push_back(message);
}

SourceMark Problems::where(const YAML::Mark& mark) const {
  return SourceMark{file_, mark.line + 1, mark.column + 1};
}

Mapping& Mapping::on(const std::string& key, Handler handler) {
  keys_.push_back(key);
  handlers_.emplace_back(key, std::move(handler));
  return *this;
}

void Mapping::visit(const YAML::Node& node) {
  if (problems_.described_ != nullptr) {
    describe(*problems_.described_);
    return;
  }
  if (!node || node.IsNull()) return;  // an empty section keeps its defaults
  if (!node.IsMap()) {
    problems_.add(problems_.at(node), path_ + ": expected a mapping with keys " + join(keys_));
    return;
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    // A complex key ("? [a, b]") cannot name anything here; as<std::string>() would throw.
    if (!entry.first.IsScalar()) {
      problems_.add(entry.first.Mark(), path_ + ": keys must be plain names");
      continue;
    }
    const std::string key = entry.first.as<std::string>();
    if (!seen.insert(key).second) {
      problems_.add(entry.first.Mark(), "duplicate key \"" + key + "\" in " + path_);
      continue;
    }
    bool known = false;
    for (auto& [name, handler] : handlers_) {
      if (name == key) {
        problems_.key_mark = entry.first.Mark();
        handler(entry.second);
        known = true;
      }
    }
    if (!known) {
      problems_.add(entry.first.Mark(), "unknown key \"" + key + "\" in " + path_ +
                                            " (expected one of: " + join(keys_) + ")");
    }
  }
}

void Mapping::describe(std::vector<ConfigKeyInfo>& keys) {
  // Every reader is handed an empty mapping: a section's reader visits it and so lists its own
  // keys; a value's reader refuses it with "PATH: expected FORM", which says what the key takes.
  const YAML::Node probe(YAML::NodeType::Map);
  const std::string parent = problems_.describing_path_;
  for (auto& [name, handler] : handlers_) {
    const std::string path = parent.empty() ? name : parent + "." + name;
    const std::size_t index = keys.size();
    const std::size_t messages = problems_.messages_.size();
    keys.push_back(ConfigKeyInfo{path, false, "", ""});
    problems_.describing_path_ = path;
    try {
      handler(probe);
    } catch (const std::exception&) {
      // A reader that converts before it checks throws on the probe; the key is still listed.
    }
    problems_.describing_path_ = parent;
    keys[index].section = keys.size() > index + 1;
    // The last word is the most precise: a range check follows the type check, and a section's
    // reader may check its keys after visiting them.
    for (std::size_t k = index; k < keys.size(); ++k) {
      const std::string marker = keys[k].path + ": expected ";
      for (std::size_t i = messages; i < problems_.messages_.size(); ++i) {
        const auto& message = problems_.messages_[i];
        if (message.rfind(marker, 0) == 0) keys[k].expected = message.substr(marker.size());
      }
    }
  }
}

bool is_scalar(Problems& problems, const YAML::Node& node, const std::string& path,
               const std::string& expected) {
  if (node.IsScalar()) return true;
  problems.add(problems.at(node), path + ": expected " + expected);
  return false;
}

std::optional<std::string> marked_scalar(Problems& problems, const YAML::Node& node,
                                         const std::string& path, const std::string& expected,
                                         SourceMark& mark) {
  if (!is_scalar(problems, node, path, expected)) return std::nullopt;
  mark = problems.where(node.Mark());
  return node.as<std::string>();
}

Mapping::Handler read_string(Problems& problems, const std::string& path, std::string& out,
                             SourceMark* mark) {
  return [&problems, path, &out, mark](const YAML::Node& node) {
    if (!is_scalar(problems, node, path, "a string")) return;
    out = node.as<std::string>();
    if (mark) *mark = problems.where(node.Mark());
  };
}

Mapping::Handler read_nonempty_string(Problems& problems, const std::string& path,
                                      std::string& out) {
  return [&problems, path, &out](const YAML::Node& node) {
    if (!is_scalar(problems, node, path, "a non-empty string")) return;
    const auto value = node.as<std::string>();
    if (value.empty()) {
      problems.add(problems.at(node), path + ": expected a non-empty string");
      return;
    }
    out = value;
  };
}

Mapping::Handler read_bool(Problems& problems, const std::string& path, bool& out) {
  return [&problems, path, &out](const YAML::Node& node) {
    const std::string expected = "true or false";
    if (!is_scalar(problems, node, path, expected)) return;
    const auto text = node.as<std::string>();
    if (text == "true") {
      out = true;
    } else if (text == "false") {
      out = false;
    } else {
      problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
    }
  };
}

Mapping::Handler read_non_negative(Problems& problems, const std::string& path, double& out) {
  return [&problems, path, &out](const YAML::Node& node) {
    const std::string expected = "a number >= 0";
    if (!is_scalar(problems, node, path, expected)) return;
    const auto text = node.as<std::string>();
    try {
      std::size_t used = 0;
      const double value = std::stod(text, &used);
      // stod also accepts "inf" and "nan"; neither is a usable power or period.
      if (used != text.size() || !std::isfinite(value) || value < 0) {
        throw std::invalid_argument(text);
      }
      out = value;
    } catch (const std::exception&) {
      problems.add(problems.at(node), path + ": expected " + expected + ", got \"" + text + "\"");
    }
  };
}

std::optional<std::string> control_character(const std::string& text, bool tab_allowed) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte >= 0x20 && byte != 0x7f) || (byte == '\t' && tab_allowed)) continue;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", byte);
    return std::string(hex) + " at position " + std::to_string(i);
  }
  return std::nullopt;
}

}  // namespace hwperf::yaml_reader
