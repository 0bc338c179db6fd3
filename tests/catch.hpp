// Catch2 under one include for both versions the project builds with: 2.13 (Debian 12) and 3.x
// (Debian 13, which the container image uses). Version 3 split the single header and moved the
// string matchers into Catch::Matchers with new names; the tests keep version 2's spelling.
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>

#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text,
                                                CaseSensitive sensitivity = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, sensitivity);
}
using Matchers::EndsWith;
using Matchers::Matches;
using Matchers::StartsWith;
}  // namespace Catch
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
