# Helpers that keep the layering honest and the test registrations short.
#
# symmem_add_layer(NAME <layer> SOURCES ... DEPS <lower layers>)
#   Builds static library symmem_<layer>. Its private include root holds only itself and
#   the layers it names in DEPS (and theirs), so an upward #include fails to compile.
function(symmem_add_layer)
  cmake_parse_arguments(L "" "NAME" "SOURCES;DEPS;LIBS" ${ARGN})
  set(root ${CMAKE_BINARY_DIR}/layer-includes/${L_NAME})
  file(MAKE_DIRECTORY ${root})
  set(visible ${L_NAME})
  foreach(d IN LISTS L_DEPS)
    get_property(dvis GLOBAL PROPERTY SYMMEM_LAYER_VISIBLE_${d})
    list(APPEND visible ${d} ${dvis})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  set_property(GLOBAL PROPERTY SYMMEM_LAYER_VISIBLE_${L_NAME} ${visible})
  foreach(v IN LISTS visible)
    string(REPLACE "/" "_" vflat ${v})
    get_filename_component(parent ${root}/${v} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${v} ${root}/${v} SYMBOLIC)
  endforeach()
  string(REPLACE "/" "_" tname ${L_NAME})
  if(L_SOURCES)
    add_library(symmem_${tname} STATIC ${L_SOURCES})
    set(scope PUBLIC)
  else()  # header-only layer
    add_library(symmem_${tname} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(symmem_${tname}
    ${scope} $<BUILD_INTERFACE:${root}> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  foreach(d IN LISTS L_DEPS)
    string(REPLACE "/" "_" dflat ${d})
    target_link_libraries(symmem_${tname} ${scope} symmem_${dflat})
  endforeach()
  if(L_LIBS)
    target_link_libraries(symmem_${tname} ${scope} ${L_LIBS})
  endif()
  target_compile_definitions(symmem_${tname} ${scope} SYMMEM_BUILDING)
endfunction()

# symmem_add_unit_test(NAME <name> SOURCES ... LIBS ...): one GoogleTest binary, one CTest.
function(symmem_add_unit_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest_main)
  add_test(NAME unit.${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(unit.${T_NAME} PROPERTIES TIMEOUT 120 LABELS unit)
endfunction()

# symmem_add_mp_test(NAME <name> COMMAND <prog> [args] NPES <n...> [TIMEOUT s])
#   Registers one CTest per PE count, each run under symmem-run with a timeout.
function(symmem_add_mp_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;NPES;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  foreach(n IN LISTS T_NPES)
    add_test(NAME ${T_NAME}.np${n}
      COMMAND $<TARGET_FILE:symmem-run> -n ${n} --timeout ${T_TIMEOUT} ${T_COMMAND})
    math(EXPR ctest_to "${T_TIMEOUT} + 30")
    set_tests_properties(${T_NAME}.np${n} PROPERTIES TIMEOUT ${ctest_to} LABELS mp
      ENVIRONMENT "SYMMEM_LOG_LEVEL=warn;${T_ENV}")
  endforeach()
endfunction()

# symmem_add_ucx_test(NAME <name> COMMAND <prog> [args] [TIMEOUT s] [LAYOUTS 2x2 all])
#   The same program across nodes, over UCX's TCP transport on loopback only
#   (UCX_TLS=tcp, UCX_NET_DEVICES=lo): <name>.ucx_2x2 runs 4 PEs as 2 emulated nodes of 2
#   (symmem-run --emulate-nodes 2: shared memory inside a node, UCX between them);
#   <name>.ucx_all runs 3 PEs with every peer forced onto UCX (SYMMEM_TRANSPORT=ucx).
function(symmem_add_ucx_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "COMMAND;LAYOUTS;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(NOT T_LAYOUTS)
    set(T_LAYOUTS 2x2 all)
  endif()
  set(env "UCX_TLS=tcp;UCX_NET_DEVICES=lo;SYMMEM_LOG_LEVEL=warn;SYMMEM_OP_TIMEOUT=${T_TIMEOUT};${T_ENV}")
  math(EXPR ctest_to "${T_TIMEOUT} + 30")
  foreach(l IN LISTS T_LAYOUTS)
    if(l STREQUAL "2x2")
      add_test(NAME ${T_NAME}.ucx_2x2
        COMMAND $<TARGET_FILE:symmem-run> --emulate-nodes 2 -n 4 --timeout ${T_TIMEOUT} ${T_COMMAND})
      set_tests_properties(${T_NAME}.ucx_2x2 PROPERTIES TIMEOUT ${ctest_to} LABELS "mp;ucx" ENVIRONMENT "${env}")
    else()
      add_test(NAME ${T_NAME}.ucx_all
        COMMAND $<TARGET_FILE:symmem-run> -n 3 --timeout ${T_TIMEOUT} ${T_COMMAND})
      set_tests_properties(${T_NAME}.ucx_all PROPERTIES TIMEOUT ${ctest_to} LABELS "mp;ucx"
        ENVIRONMENT "${env};SYMMEM_TRANSPORT=ucx")
    endif()
  endforeach()
endfunction()

# symmem_isolate_openmpi(): gives each test of the calling directory its own Open MPI session
# directory (OMPI_MCA_orte_tmpdir_base under the build tree). With the shared default
# (/tmp/ompi.HOST.UID) one mpirun that finishes removes the directory while a parallel one
# creates its pid.N in it, and that one fails in orte_init. Call it through
# cmake_language(DEFER CALL ...) at the top of a directory whose tests start mpirun or oshrun.
function(symmem_isolate_openmpi)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
                 "OMPI_MCA_orte_tmpdir_base=${CMAKE_CURRENT_BINARY_DIR}/ompi-tmp/${t}")
  endforeach()
endfunction()
