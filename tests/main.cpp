// Catch2 2's main; Catch2 3 links its own (Catch2::Catch2WithMain, see CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include "tests/catch.hpp"
