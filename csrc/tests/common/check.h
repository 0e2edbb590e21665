// A minimal check library for the core's tests (no framework is installed).
//
//   CHECK(condition)       records a failure with file:line when false.
//   CHECK_EQ(a, b)         records a failure showing both values when a != b.
//   Both evaluate to a bool (true = passed), so a loop can stop early.
//   SetContext("...")      text printed with every later failure (e.g. seed).
//   return memplan_test::Finish();   at the end of main: prints "N checks
//                          passed" or the failure count, returns 0 or 1.
#pragma once

#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace memplan_test {

struct Counters {
  int64_t passed = 0;
  int64_t failed = 0;
  std::string context;
};

inline Counters& State() {
  static Counters counters;
  return counters;
}

inline void SetContext(std::string context) { State().context = std::move(context); }

template <typename T, typename = void>
struct IsRange : std::false_type {};
template <typename T>
struct IsRange<T, std::void_t<decltype(std::declval<const T&>().begin()),
                              decltype(std::declval<const T&>().end())>> : std::true_type {};

template <typename T>
std::string Repr(const T& value) {
  std::ostringstream out;
  if constexpr (std::is_same_v<T, std::string>) {
    out << '"' << value << '"';
  } else if constexpr (IsRange<T>::value) {
    out << '{';
    bool first = true;
    for (const auto& element : value) {
      out << (first ? "" : ", ") << Repr(element);
      first = false;
    }
    out << '}';
  } else if constexpr (std::is_same_v<T, __int128>) {
    out << static_cast<long double>(value);
  } else {
    out << value;
  }
  return out.str();
}

inline bool Record(bool ok, const char* file, int line, const std::string& what) {
  Counters& state = State();
  if (ok) {
    ++state.passed;
    return true;
  }
  // Print the first failures in full, then only count.
  if (++state.failed <= 30) {
    std::cerr << file << ":" << line << ": FAILED " << what;
    if (!state.context.empty()) std::cerr << "\n    context: " << state.context;
    std::cerr << "\n";
  }
  return false;
}

template <typename A, typename B>
bool CheckEq(const A& a, const B& b, const char* a_text, const char* b_text, const char* file,
             int line) {
  if (a == b) return Record(true, file, line, "");
  return Record(false, file, line,
                std::string("CHECK_EQ(") + a_text + ", " + b_text + ")\n    left:  " + Repr(a) +
                    "\n    right: " + Repr(b));
}

inline int Finish() {
  const Counters& state = State();
  if (state.failed == 0) {
    std::cout << state.passed << " checks passed\n";
    return 0;
  }
  std::cout << state.failed << " checks FAILED (" << state.passed << " passed)\n";
  return 1;
}

}  // namespace memplan_test

#define CHECK(condition) \
  ::memplan_test::Record(static_cast<bool>(condition), __FILE__, __LINE__, "CHECK(" #condition ")")
#define CHECK_EQ(a, b) ::memplan_test::CheckEq((a), (b), #a, #b, __FILE__, __LINE__)
