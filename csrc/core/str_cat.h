// StrCat: builds an error message from parts. Only called on failure paths,
// so checks that pass never pay for a stream.
#pragma once

#include <sstream>
#include <string>

namespace cadence_memplan {

template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace cadence_memplan
