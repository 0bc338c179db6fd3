#include "collectors/events/formula.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

#include "common/text.h"

namespace hwperf::events {

struct Formula::Node {
  enum class Kind { number, variable, negate, add, subtract, multiply, divide };
  Kind kind = Kind::number;
  double number = 0;
  std::string text;  // a number as written, or a variable's name
  std::shared_ptr<const Node> left, right;
};

namespace {

using Node = Formula::Node;
using NodePtr = std::shared_ptr<const Node>;

// Deep enough for any formula a person writes; a deeper one would only exhaust the stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  NodePtr parse() {
    NodePtr root = sum(0);
    skip_space();
    if (at_ < text_.size()) fail("unexpected '" + std::string(1, text_[at_]) + "'");
    return root;
  }
  std::vector<std::string> variables;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("at character " + std::to_string(at_ + 1) + ": " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  static NodePtr binary(Node::Kind kind, NodePtr left, NodePtr right) {
    auto node = std::make_shared<Node>();
    node->kind = kind;
    node->left = std::move(left);
    node->right = std::move(right);
    return node;
  }
  NodePtr sum(int depth) {
    NodePtr left = product(depth);
    while (true) {
      if (take('+')) {
        left = binary(Node::Kind::add, left, product(depth));
      } else if (take('-')) {
        left = binary(Node::Kind::subtract, left, product(depth));
      } else {
        return left;
      }
    }
  }
  NodePtr product(int depth) {
    NodePtr left = unary(depth);
    while (true) {
      if (take('*')) {
        left = binary(Node::Kind::multiply, left, unary(depth));
      } else if (take('/')) {
        left = binary(Node::Kind::divide, left, unary(depth));
      } else {
        return left;
      }
    }
  }
  NodePtr unary(int depth) {
    if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
    if (take('-')) return binary(Node::Kind::negate, unary(depth + 1), nullptr);
    if (take('(')) {
      NodePtr inner = sum(depth + 1);
      if (!take(')')) fail("expected ')'");
      return inner;
    }
    skip_space();
    const std::size_t start = at_;
    if (at_ < text_.size() &&
        (std::isdigit(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.')) {
      while (at_ < text_.size() &&
             (std::isdigit(static_cast<unsigned char>(text_[at_])) || text_[at_] == '.' ||
              text_[at_] == 'e' ||
              ((text_[at_] == '-' || text_[at_] == '+') && at_ > start && text_[at_ - 1] == 'e'))) {
        ++at_;
      }
      auto node = std::make_shared<Node>();
      node->text = std::string(text_.substr(start, at_ - start));
      char* end = nullptr;
      node->number = std::strtod(node->text.c_str(), &end);
      if (end != node->text.c_str() + node->text.size()) {
        at_ = start;
        fail("\"" + node->text + "\" is not a number");
      }
      return node;
    }
    while (at_ < text_.size() &&
           (std::islower(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_' ||
            (at_ > start && std::isdigit(static_cast<unsigned char>(text_[at_]))))) {
      ++at_;
    }
    if (at_ == start) fail("expected a name, a number or '('");
    auto node = std::make_shared<Node>();
    node->kind = Node::Kind::variable;
    node->text = std::string(text_.substr(start, at_ - start));
    if (std::find(variables.begin(), variables.end(), node->text) == variables.end()) {
      variables.push_back(node->text);
    }
    return node;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

std::optional<double> evaluate_node(const Node& node, const std::map<std::string, double>& values) {
  switch (node.kind) {
    case Node::Kind::number: return node.number;
    case Node::Kind::variable: {
      const auto it = values.find(node.text);
      if (it == values.end()) return std::nullopt;
      return it->second;
    }
    case Node::Kind::negate: {
      const auto inner = evaluate_node(*node.left, values);
      if (!inner) return std::nullopt;
      return -*inner;
    }
    default: break;
  }
  const auto left = evaluate_node(*node.left, values);
  const auto right = evaluate_node(*node.right, values);
  if (!left || !right) return std::nullopt;
  switch (node.kind) {
    case Node::Kind::add: return *left + *right;
    case Node::Kind::subtract: return *left - *right;
    case Node::Kind::multiply: return *left * *right;
    default:
      if (!(*right > 0)) return std::nullopt;
      return *left / *right;
  }
}

// PromQL's precedence is arithmetic's, but a filter ("> 0") binds looser than every operator,
// so each operand that is not a plain term is parenthesised.
std::string promql_node(const Node& node,
                        const std::function<std::string(const std::string&)>& term) {
  const auto operand = [&](const Node& inner) {
    const std::string text = promql_node(inner, term);
    const bool plain = inner.kind == Node::Kind::number || inner.kind == Node::Kind::variable;
    return plain ? text : "(" + text + ")";
  };
  switch (node.kind) {
    case Node::Kind::number: return node.text;
    case Node::Kind::variable: return term(node.text);
    case Node::Kind::negate: return "-" + operand(*node.left);
    case Node::Kind::add: return operand(*node.left) + " + " + operand(*node.right);
    case Node::Kind::subtract: return operand(*node.left) + " - " + operand(*node.right);
    case Node::Kind::multiply: return operand(*node.left) + " * " + operand(*node.right);
    case Node::Kind::divide:
      if (node.right->kind == Node::Kind::number) {
        return operand(*node.left) + " / " + node.right->text;
      }
      return operand(*node.left) + " / (" + promql_node(*node.right, term) + " > 0)";
  }
  return "";
}

}  // namespace

Formula Formula::parse(std::string_view text) {
  Parser parser(text);
  Formula formula;
  formula.text_ = std::string(trim(text));
  if (formula.text_.empty()) throw std::invalid_argument("an empty formula");
  formula.root_ = parser.parse();
  formula.variables_ = std::move(parser.variables);
  return formula;
}

std::optional<double> Formula::evaluate(const std::map<std::string, double>& values) const {
  return evaluate_node(*root_, values);
}

std::string Formula::promql(const std::function<std::string(const std::string&)>& term) const {
  return promql_node(*root_, term);
}

}  // namespace hwperf::events
