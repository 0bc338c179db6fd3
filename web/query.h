// The query string of a request (HttpRequest::query), read once where a route needs a parameter.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hwperf {

// Every value of `key` in `query` ("target=a&target=b" gives a and b), percent-decoded, '+' read
// as a space, as an HTML form sends them. A malformed escape ("%zz") is kept as written.
std::vector<std::string> query_values(std::string_view query, std::string_view key);

}  // namespace hwperf
