// StrCat: builds an error message from parts. Only called on failure paths,
// so checks that pass never pay for a stream.
#pragma once

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

namespace cadence_memplan {

template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// 9216 -> "9.0 KiB": binary units, one decimal; below 1 KiB in bytes. The
// same text as the Python package's stats.format_bytes, so messages from the
// core and from Python name sizes alike.
inline std::string FormatBytes(int64_t count) {
  constexpr std::pair<const char*, int64_t> kUnits[] = {
      {"TiB", int64_t{1} << 40}, {"GiB", int64_t{1} << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}};
  for (const auto& [unit, scale] : kUnits) {
    if (count >= scale || count <= -scale) {
      char text[64];
      std::snprintf(text, sizeof text, "%.1f %s",
                    static_cast<double>(count) / static_cast<double>(scale), unit);
      return text;
    }
  }
  return StrCat(count, " B");
}

// 5120 -> "5,120", as Python's format(count, ",").
inline std::string WithThousands(int64_t count) {
  const std::string digits = std::to_string(count);
  const size_t sign = count < 0 ? 1 : 0;
  std::string grouped = digits.substr(0, sign);
  for (size_t k = sign; k < digits.size(); ++k) {
    if (k > sign && (digits.size() - k) % 3 == 0) grouped += ',';
    grouped += digits[k];
  }
  return grouped;
}

}  // namespace cadence_memplan
