#!/usr/bin/env bash
# Build google/minimalloc's command-line solver into build/minimalloc/minimalloc, for
# bench/minimalloc_compare.py. MiniMalloc is a benchmark peer only: it is not part of the
# package, its build or CI.
#
#   bench/build_minimalloc.sh [MINIMALLOC_SRC [ABSEIL_SRC]]
#
# MINIMALLOC_SRC: a checkout of https://github.com/google/minimalloc; ABSEIL_SRC: a
# checkout of https://github.com/abseil/abseil-cpp at the commit MiniMalloc's submodule
# external/abseil-cpp pins (MiniMalloc's main.cc needs absl/log, which Debian 12's abseil
# lacks). Without ABSEIL_SRC, MINIMALLOC_SRC/external/abseil-cpp is used when it holds a
# checkout. Without arguments both are cloned (network needed) at the commits below into
# build/minimalloc/src/.
#
# The upstream CMakeLists.txt also wants googletest for its tests, so this script builds
# the binary from a small CMake project of its own (src/*.cc and abseil). Environment:
# BUILD_DIR (default build/minimalloc), JOBS (default 2).
set -euo pipefail

MINIMALLOC_COMMIT=9f5cf810fec4494df473c23cffd0567989e81b69
ABSEIL_COMMIT=b75a3ff4afda9654649328e25555181759d7ad69 # minimalloc's external/abseil-cpp

here=$(cd "$(dirname "$0")/.." && pwd)
out=${BUILD_DIR:-$here/build/minimalloc}
jobs=${JOBS:-2}
mkdir -p "$out"
out=$(cd "$out" && pwd)

clone_at() { # url dir commit
  if [[ ! -d $2/.git ]]; then
    git clone --quiet "$1" "$2"
  fi
  git -C "$2" checkout --quiet "$3"
}

if [[ $# -ge 1 ]]; then
  minimalloc_src=$(cd "$1" && pwd)
else
  minimalloc_src=$out/src/minimalloc
  clone_at https://github.com/google/minimalloc.git "$minimalloc_src" "$MINIMALLOC_COMMIT"
fi
if [[ $# -ge 2 ]]; then
  abseil_src=$(cd "$2" && pwd)
elif [[ -f $minimalloc_src/external/abseil-cpp/CMakeLists.txt ]]; then
  abseil_src=$minimalloc_src/external/abseil-cpp
else
  abseil_src=$out/src/abseil-cpp
  clone_at https://github.com/abseil/abseil-cpp.git "$abseil_src" "$ABSEIL_COMMIT"
fi
for file in "$minimalloc_src/src/main.cc" "$abseil_src/absl/log/log.h"; do
  if [[ ! -f $file ]]; then
    echo "error: $file is missing (MiniMalloc's main.cc needs abseil with absl/log)" >&2
    exit 1
  fi
done

project=$out/project
mkdir -p "$project"
cat >"$project/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(minimalloc_bench LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(ABSL_PROPAGATE_CXX_STD ON)
add_subdirectory(${ABSEIL_SRC} abseil EXCLUDE_FROM_ALL)
file(GLOB sources ${MINIMALLOC_SRC}/src/*.cc)
add_executable(minimalloc ${sources})
target_include_directories(minimalloc PRIVATE ${MINIMALLOC_SRC}/src)
target_link_libraries(minimalloc PRIVATE
  absl::flags absl::flags_parse absl::log absl::log_initialize absl::statusor)
EOF

generator=()
if command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S "$project" -B "$out/cmake" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DMINIMALLOC_SRC="$minimalloc_src" -DABSEIL_SRC="$abseil_src" -DBUILD_TESTING=OFF
cmake --build "$out/cmake" --target minimalloc -j "$jobs"
cp "$out/cmake/minimalloc" "$out/minimalloc"
echo "built $out/minimalloc"
