# The OpenSHMEM profiling interface (pshmem_*), made by one mechanism for every routine:
#  - pshmem.h: the C preprocessor expands shmem.h (every X-macro), each shmem_ function
#    declaration is renamed (cmake/gen_pshmem_h.sh);
#  - libsymmem.so: nm lists the shmem_ functions the layer archives define, and each gets
#    a second name through -Wl,--defsym=pshmem_X=shmem_X (cmake/gen_pshmem_defsym.sh).
# A routine added anywhere later gets its pshmem_ twin with no change here;
# tests/p2p/check_pshmem.sh checks the two lists against each other.
function(symmem_add_profiling_names target)
  cmake_parse_arguments(P "" "" "LAYERS" ${ARGN})
  set(archives)
  foreach(l IN LISTS P_LAYERS)
    list(APPEND archives $<TARGET_FILE:symmem_${l}>)
  endforeach()
  set(rsp ${CMAKE_CURRENT_BINARY_DIR}/pshmem_defsym.rsp)
  add_custom_command(OUTPUT ${rsp}
    COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/gen_pshmem_defsym.sh ${CMAKE_NM} ${rsp} ${archives}
    DEPENDS ${archives} ${PROJECT_SOURCE_DIR}/cmake/gen_pshmem_defsym.sh
    COMMENT "Profiling names (pshmem_*) of libsymmem"
    VERBATIM)
  add_custom_target(${target}_pshmem_defsym DEPENDS ${rsp})
  add_dependencies(${target} ${target}_pshmem_defsym)
  target_link_options(${target} PRIVATE "@${rsp}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${rsp})

  set(hdr ${PROJECT_BINARY_DIR}/include/pshmem.h)
  file(GLOB headers ${PROJECT_SOURCE_DIR}/include/*.h ${PROJECT_SOURCE_DIR}/include/symmem/*.h)
  add_custom_command(OUTPUT ${hdr}
    COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/gen_pshmem_h.sh ${CMAKE_C_COMPILER} ${PROJECT_SOURCE_DIR}/include ${hdr}
    DEPENDS ${headers} ${PROJECT_SOURCE_DIR}/cmake/gen_pshmem_h.sh
    COMMENT "Generating pshmem.h"
    VERBATIM)
  add_custom_target(${target}_pshmem_h DEPENDS ${hdr})
  add_dependencies(${target} ${target}_pshmem_h)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>)
  install(FILES ${hdr} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
