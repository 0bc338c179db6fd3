#include <string>
#include <vector>

#include "exporter/app.h"

int main(int argc, char** argv) {
  return hwperf::run_exporter(std::vector<std::string>(argv + 1, argv + argc));
}
