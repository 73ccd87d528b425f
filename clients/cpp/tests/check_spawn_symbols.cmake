# launcher.glibc_floor: the client library calls no spawn function newer than
# glibc 2.17 (issue 25): posix_spawn_file_actions_addchdir_np (2.29) and
# ...addclosefrom_np (2.34) would set the floor of every game linking it.
# Usage: cmake -DNM=<nm> -DLIB=<libgame_sidecar_client.a> -P check_spawn_symbols.cmake
execute_process(COMMAND ${NM} -u ${LIB} OUTPUT_VARIABLE undefined RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -u ${LIB} failed (${rc})")
endif()
string(REGEX MATCHALL "[A-Za-z_]*(posix_spawn_file_actions_add[a-z]+_np|closefrom|execvpe|pidfd_[a-z_]+)" newer "${undefined}")
if(newer)
  list(REMOVE_DUPLICATES newer)
  message(FATAL_ERROR "the library calls glibc functions newer than 2.17: ${newer}")
endif()
string(REGEX MATCH "vfork" has_vfork "${undefined}")
if(NOT has_vfork)
  message(FATAL_ERROR "no vfork in ${LIB}: is the launcher in it?")
endif()
message(STATUS "no spawn function newer than glibc 2.17 in ${LIB}")
