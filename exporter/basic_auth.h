// Basic authentication against --web.config.file's basic_auth_users (config/web_config.h).
#pragma once

#include <string>
#include <string_view>

#include "config/web_config.h"

namespace hwperf {

// Whether an Authorization header value ("Basic base64(user:password)") names a configured user
// with the right password. The password is checked with bcrypt at the cost stored in the hash,
// and the hashes are compared in constant time; an unknown user costs a bcrypt run as well, so
// the time taken does not say which users exist. True when no users are configured.
bool basic_auth_allows(const WebConfigFile& config, std::string_view authorization);

// Whether `password` matches the bcrypt `hash` ($2a$, $2b$ or $2y$).
bool bcrypt_matches(const std::string& password, const std::string& hash);

}  // namespace hwperf
