# Copies one sidecar/v1/*.proto to game_sidecar/v1/ with its imports rewritten,
# so the generated C++ headers live (and install) under game_sidecar/v1/ and
# include each other there. The package (sidecar.v1) and so the wire names are
# unchanged. Run as: cmake -DIN=<proto> -DOUT=<staged proto> -P stage_proto.cmake
file(READ "${IN}" content)
string(REPLACE "import \"sidecar/v1/" "import \"game_sidecar/v1/" content "${content}")
file(WRITE "${OUT}" "${content}")
