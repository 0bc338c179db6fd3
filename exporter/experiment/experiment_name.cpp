// The process target's name for experiment mode's command: the program the command line runs,
// read as execvp and a shell read it, through the wrappers a lab puts in front of a program
// (taskset -c 1 ./prog, env X=1 ./prog, mpirun -np 4 ./prog, sh -c './prog args').
//
// A wrapper's options are not parsed (srun and mpirun have hundreds, some with values): after a
// wrapper, the first word that names a program is the one it runs. An option's value that
// happens to name a program too would be taken for it; --experiment.name is the way out.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/experiment/experiment.h"

namespace hwperf {
namespace {

// Programs that run the program their arguments name (setarch under its architecture names too).
constexpr std::string_view kWrappers[] = {"taskset", "numactl", "env",     "time",    "nice",
                                          "ionice",  "chrt",    "nohup",   "timeout", "stdbuf",
                                          "setarch", "linux32", "linux64", "i386",    "x86_64",
                                          "srun",    "mpirun",  "mpiexec", "orterun", "prterun"};
constexpr std::string_view kShells[] = {"sh", "bash", "dash", "zsh", "ksh"};
// A command nested deeper than this (env env env ...) is named where the walk stops.
constexpr int kMaxDepth = 8;

template <std::size_t N>
bool listed(const std::string_view (&names)[N], const std::string& name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

bool executable_file(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// NAME=VALUE, as env and a shell take it before a command.
bool is_assignment(const std::string& word) {
  const auto equals = word.find('=');
  if (equals == std::string::npos || equals == 0) return false;
  return std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(equals), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

std::vector<std::string> blank_separated(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (const char c : text + " ") {
    if (c != ' ' && c != '\t') {
      word += c;
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  return words;
}

using IsProgram = bool (*)(const std::string&);
std::string name_from(const std::vector<std::string>& words, std::size_t at, IsProgram is_program,
                      int depth);

// The program of a shell's -c STRING when STRING is one simple command, "" otherwise (a list, a
// pipeline, a compound command, a builtin, or words the shell would expand first).
std::string shell_string_program(const std::string& text, IsProgram is_program, int depth) {
  if (text.find_first_of(";|&(){}`\n") != std::string::npos) return "";
  const auto words = blank_separated(text);
  std::size_t at = 0;
  while (at < words.size() && (is_assignment(words[at]) || words[at] == "exec")) ++at;
  if (at == words.size() || words[at].find_first_of("'\"$\\*?[<>") != std::string::npos) return "";
  if (!is_program(words[at])) return "";
  return name_from(words, at, is_program, depth + 1);
}

// For `sh [options] -c STRING ...`: the program of STRING, or "" (a script file, no -c).
std::string shell_program(const std::vector<std::string>& words, std::size_t at,
                          IsProgram is_program, int depth) {
  bool dash_c = false;
  for (std::size_t i = at + 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "-o" || word == "+o") {
      ++i;  // set -o's option name
      continue;
    }
    if (word.size() > 1 && (word[0] == '-' || word[0] == '+')) {
      dash_c = dash_c || (word[0] == '-' && word[1] != '-' && word.find('c') != std::string::npos);
      continue;
    }
    return dash_c ? shell_string_program(word, is_program, depth) : "";
  }
  return "";
}

std::string name_from(const std::vector<std::string>& words, std::size_t at, IsProgram is_program,
                      int depth) {
  const std::string name = program_name(words[at]);
  if (depth >= kMaxDepth) return name;
  if (listed(kShells, name)) {
    const std::string program = shell_program(words, at, is_program, depth);
    return program.empty() ? name : program;
  }
  if (!listed(kWrappers, name)) return name;
  for (std::size_t i = at + 1; i < words.size(); ++i) {
    if (words[i].empty() || words[i][0] == '-' || is_assignment(words[i])) continue;
    if (is_program(words[i])) return name_from(words, i, is_program, depth + 1);
  }
  return name;  // a wrapper that runs nothing we can see (env alone prints the environment)
}

}  // namespace

std::string program_name(const std::string& program) {
  return program.substr(program.rfind('/') + 1);
}

bool is_program(const std::string& word) {
  if (word.empty()) return false;
  if (word.find('/') != std::string::npos) return executable_file(word);
  const char* path = std::getenv("PATH");
  // execvp's default search path when PATH is unset.
  const std::string directories = path != nullptr ? path : "/bin:/usr/bin";
  std::size_t begin = 0;
  while (begin <= directories.size()) {
    const auto end = std::min(directories.find(':', begin), directories.size());
    const std::string directory = directories.substr(begin, end - begin);
    if (executable_file((directory.empty() ? "." : directory) + "/" + word)) return true;
    begin = end + 1;
  }
  return false;
}

std::string command_target_name(const std::vector<std::string>& command, IsProgram is_program) {
  if (command.empty()) return "";
  return name_from(command, 0, is_program, 0);
}

}  // namespace hwperf
