// The formulas of event groups ("ins / cyc"), written once and evaluated two ways: as numbers,
// for the summary of experiment mode, and as PromQL, for the recording rules --print-rules
// writes. A formula is arithmetic (+ - * /, unary minus, parentheses, decimal numbers) over
// its group's variables; each variable stands for its event's rate, per second of wall time (a
// nanosecond event's in seconds per second), so that a ratio of two counts and a rate such as
// page faults per second are written alike.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hwperf::events {

class Formula {
 public:
  // Throws std::invalid_argument naming the position of what cannot be read ("at character 5:
  // expected a name, a number or '('").
  static Formula parse(std::string_view text);

  // The variables the formula reads, each once, in order of first use.
  const std::vector<std::string>& variables() const { return variables_; }
  const std::string& text() const { return text_; }

  // Its value where every variable has one; nullopt when a division has no denominator (an idle
  // CPU has no cycles: no IPC, rather than an infinite one) or a variable has no value.
  std::optional<double> evaluate(const std::map<std::string, double>& values) const;

  // The PromQL expression, each variable replaced by `term(variable)` and every divisor kept
  // only where it is above zero (PromQL divides by zero into Inf or NaN, which no panel wants).
  std::string promql(const std::function<std::string(const std::string&)>& term) const;

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
  std::vector<std::string> variables_;
};

}  // namespace hwperf::events
