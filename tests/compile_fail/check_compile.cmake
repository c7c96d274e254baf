# Compiles one snippet with -fsyntax-only against distgraph's include directories.
#   cmake -DCXX=<compiler> -DFLAGS=<flags.cmake> -DSOURCE=<snippet.cpp> [-DCONCEPT=<name>]
#         -P check_compile.cmake
# With CONCEPT: passes only when the snippet fails to compile with a diagnostic saying that
# CONCEPT is not satisfied (GCC: "required for the satisfaction of 'CONCEPT<...>'", Clang:
# "does not satisfy 'CONCEPT'"), and the same snippet compiles with -DDISTGRAPH_COMPILE_FAIL_FIXED (its type
# made a model), so the failure is the concept's and nothing else's.
# Without CONCEPT: a positive control, passes only when the snippet compiles.
cmake_minimum_required(VERSION 3.22)
foreach(var CXX FLAGS SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_compile.cmake: -D${var}=... is required")
  endif()
endforeach()
# Sets DISTGRAPH_INCLUDE_DIRS, DISTGRAPH_DEFINITIONS, CXX_STANDARD_FLAG, IMPLICIT_INCLUDE_DIRS.
include(${FLAGS})

set(args ${CXX_STANDARD_FLAG} -fsyntax-only)
list(REMOVE_DUPLICATES DISTGRAPH_INCLUDE_DIRS)
foreach(dir IN LISTS DISTGRAPH_INCLUDE_DIRS)
  # -I of a system directory (Boost's /usr/include) would put it before the C++ library's
  # own headers and break their #include_next; CMake drops these for targets too.
  if(NOT dir IN_LIST IMPLICIT_INCLUDE_DIRS)
    list(APPEND args -I${dir})
  endif()
endforeach()
foreach(def IN LISTS DISTGRAPH_DEFINITIONS)
  list(APPEND args -D${def})
endforeach()

function(compile out_rc out_text)
  execute_process(COMMAND ${CXX} ${args} ${ARGN} ${SOURCE}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE text)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

compile(rc text)
if(NOT CONCEPT AND NOT DEFINED SAYS)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} should compile but does not:\n${text}")
  endif()
  message(STATUS "${SOURCE} compiles")
  return()
endif()

# With SAYS (instead of CONCEPT): the first error must contain SAYS, a one-line reason.
if(DEFINED SAYS)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} compiled; it should be rejected saying '${SAYS}'")
  endif()
  string(REGEX MATCH "error: [^\n]*" first_error "${text}")
  string(FIND "${first_error}" "${SAYS}" at)
  if(at LESS 0)
    message(FATAL_ERROR "${SOURCE}: the first error does not say '${SAYS}':\n${text}")
  endif()
  compile(rc_fixed text_fixed -DDISTGRAPH_COMPILE_FAIL_FIXED)
  if(NOT rc_fixed EQUAL 0)
    message(FATAL_ERROR "${SOURCE} with DISTGRAPH_COMPILE_FAIL_FIXED should compile but does "
                        "not:\n${text_fixed}")
  endif()
  message(STATUS "${SOURCE} is rejected saying '${SAYS}', and compiles once fixed")
  return()
endif()

if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled; it should be rejected as not a ${CONCEPT}")
endif()
# Quotes are ' or, in a UTF-8 locale, GCC's curly ones: match any non-letter bytes.
set(said_not_a "(satisfaction of [^A-Za-z]+(distgraph::)?${CONCEPT}<)")
string(APPEND said_not_a "|(does not satisfy [^A-Za-z]+(distgraph::)?${CONCEPT}[^A-Za-z])")
if(NOT text MATCHES "${said_not_a}")
  message(FATAL_ERROR "${SOURCE} failed to compile, but no diagnostic says it is not a "
                      "${CONCEPT}:\n${text}")
endif()
compile(rc_fixed text_fixed -DDISTGRAPH_COMPILE_FAIL_FIXED)
if(NOT rc_fixed EQUAL 0)
  message(FATAL_ERROR "${SOURCE} with DISTGRAPH_COMPILE_FAIL_FIXED (a model of ${CONCEPT}) "
                      "should compile but does not, so the snippet may fail for another "
                      "reason:\n${text_fixed}")
endif()
message(STATUS "${SOURCE} is rejected as not a ${CONCEPT}, and compiles once fixed")
