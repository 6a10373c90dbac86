# Top-level CMakeLists for ggml, installed as ggml/CMakeLists.txt in run.sh's
# copy of the sources: the ollama module ships ggml/src with its CMake files
# but not this one. The options are llama.cpp's defaults for an x86 or arm64
# build on the machine that runs it (native code, llamafile's SGEMM, OpenMP,
# runtime weight repacking), so the figures are those of a stock llama.cpp.
cmake_minimum_required(VERSION 3.14)
project("ggml" C CXX ASM)
list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_SOURCE_DIR}/cmake/")
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if (NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

set(GGML_VERSION_MAJOR 0)
set(GGML_VERSION_MINOR 0)
set(GGML_VERSION_PATCH 0)
set(GGML_VERSION "0.0.0")
set(GGML_BUILD_COMMIT "ec98e2002")

option(BUILD_SHARED_LIBS "" ON)
option(GGML_BACKEND_DL   "" OFF)
option(GGML_CPU          "" ON)
option(GGML_NATIVE       "" ON)
option(GGML_LLAMAFILE    "" ON)
option(GGML_OPENMP       "" ON)
option(GGML_CPU_REPACK   "" ON)
option(GGML_ACCELERATE   "" ON)
set(GGML_SCHED_MAX_COPIES "4" CACHE STRING "")

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED true)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED true)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
include(GNUInstallDirs)

add_compile_definitions(GGML_VERSION="0.0.0" GGML_COMMIT="ec98e2002")
add_subdirectory(src)
