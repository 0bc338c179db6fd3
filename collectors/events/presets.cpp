#include "collectors/events/presets.h"

#include <cctype>
#include <map>

namespace hwperf::events {
namespace {

// A value of the postfix formula: a sum of native events (by index) times integers, plus an
// integer constant.
struct Linear {
  std::map<std::size_t, std::int64_t> terms;
  std::int64_t constant = 0;
};

Linear combine(const Linear& a, const Linear& b, std::int64_t sign) {
  Linear sum = a;
  for (const auto& [index, coefficient] : b.terms) sum.terms[index] += sign * coefficient;
  sum.constant += sign * b.constant;
  return sum;
}

Linear scale(const Linear& value, std::int64_t factor) {
  Linear scaled;
  for (const auto& [index, coefficient] : value.terms) scaled.terms[index] = coefficient * factor;
  scaled.constant = value.constant * factor;
  return scaled;
}

bool all_digits(std::string_view text, std::size_t from) {
  if (text.size() <= from || text.size() - from > 9) return false;
  for (std::size_t i = from; i < text.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) == 0) return false;
  }
  return true;
}

// PAPI's postfix evaluation (papi_internal.c, _papi_hwi_postfix_calc): tokens between '|', N<i>
// the i-th native event, decimal integers, + - * /, and # for the CPU's clock in Hz.
Derivation postfix_derivation(std::string_view postfix, const std::vector<std::string>& natives) {
  Derivation result;
  const std::string formula = "the postfix formula " + std::string(postfix);
  std::vector<Linear> stack;
  std::size_t at = 0;
  while (at <= postfix.size()) {
    const std::size_t bar = std::min(postfix.find('|', at), postfix.size());
    const std::string_view token = postfix.substr(at, bar - at);
    at = bar + 1;
    if (token.empty()) continue;
    if (token[0] == 'N' && all_digits(token, 1)) {
      const auto index = static_cast<std::size_t>(std::stoul(std::string(token.substr(1))));
      if (index >= natives.size()) {
        result.refused = formula + " reads " + std::string(token) + ", one of " +
                         std::to_string(natives.size()) + " native events";
        return result;
      }
      stack.push_back(Linear{{{index, 1}}, 0});
    } else if (all_digits(token, 0)) {
      stack.push_back(Linear{{}, std::stoll(std::string(token))});
    } else if (token == "#") {
      result.refused = formula + " uses the CPU's clock rate (#): a rate, not a count";
      return result;
    } else if (token == "+" || token == "-" || token == "*" || token == "/") {
      if (stack.size() < 2) break;
      const Linear b = stack.back();
      stack.pop_back();
      Linear& a = stack.back();
      if (token == "/") {
        result.refused = formula + " divides: a ratio, not a count";
        return result;
      }
      if (token == "*") {
        if (!a.terms.empty() && !b.terms.empty()) {
          result.refused = formula + " multiplies two events: not a sum of counts";
          return result;
        }
        a = a.terms.empty() ? scale(b, a.constant) : scale(a, b.constant);
      } else {
        a = combine(a, b, token == "+" ? 1 : -1);
      }
    } else {
      result.refused = formula + " has a token, " + std::string(token) + ", PAPI does not read";
      return result;
    }
  }
  if (stack.size() != 1) {
    result.refused = formula + " does not leave one value";
    return result;
  }
  if (stack.front().constant != 0) {
    result.refused = formula + " adds a constant: not a count";
    return result;
  }
  for (const auto& [index, coefficient] : stack.front().terms) {
    if (coefficient != 0) result.terms.push_back({natives[index], coefficient});
  }
  return result;
}

}  // namespace

Derivation linear_derivation(std::string_view derived, std::string_view postfix,
                             const std::vector<std::string>& natives) {
  Derivation result;
  if (natives.empty()) {
    result.refused = "PAPI names no native event for it";
    return result;
  }
  if (derived.empty() || derived == "NOT_DERIVED" || derived == "DERIVED_ADD" ||
      derived == "DERIVED_SUB") {
    if ((derived.empty() || derived == "NOT_DERIVED") && natives.size() != 1) {
      result.refused = "PAPI counts it as one event programmed with " +
                       std::to_string(natives.size()) + " native codes";
      return result;
    }
    for (std::size_t i = 0; i < natives.size(); ++i) {
      result.terms.push_back({natives[i], derived == "DERIVED_SUB" && i > 0 ? -1 : 1});
    }
    return result;
  }
  if (derived == "DERIVED_POSTFIX") {
    result = postfix_derivation(postfix, natives);
    if (result.refused.empty() && result.terms.empty()) {
      result.refused = "the postfix formula " + std::string(postfix) + " sums to nothing";
    }
    return result;
  }
  if (derived == "DERIVED_PS" || derived == "DERIVED_ADD_PS") {
    result.refused = "PAPI derives it as " + std::string(derived) +
                     ": divided by the cycle counter into a rate per second, not a count";
    return result;
  }
  result.refused =
      "PAPI derives it as " + std::string(derived) + ", which is not a sum of native events";
  return result;
}

std::string derivation_text(const std::vector<PresetTerm>& terms) {
  std::string text;
  for (const auto& term : terms) {
    const std::int64_t magnitude = term.coefficient < 0 ? -term.coefficient : term.coefficient;
    if (!text.empty()) text += term.coefficient < 0 ? " - " : " + ";
    if (text.empty() && term.coefficient < 0) text += "-";
    if (magnitude != 1) text += std::to_string(magnitude) + " x ";
    text += term.native;
  }
  return text;
}

std::string PresetDefinition::single_native() const {
  const auto& terms = derivation.terms;
  return available && terms.size() == 1 && terms[0].coefficient == 1 ? terms[0].native : "";
}

}  // namespace hwperf::events
