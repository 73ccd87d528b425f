// A C++ exception thrown and caught inside a shared library linked like
// libgame_sidecar (static libstdc++ and libgcc_eh, glibc_compat.cpp's
// _dl_find_object in place of glibc's): the unwinder must still find the
// library's unwind tables. gRPC and protobuf rarely throw, so the C test alone
// would not notice a broken unwinder until a game hit one.
#include <stdexcept>
#include <string>

extern "C" __attribute__((visibility("default"))) int unwind_probe(int depth) {
  try {
    if (depth > 0) throw std::runtime_error("probe " + std::to_string(depth));
    return 0;
  } catch (const std::runtime_error& e) {
    return static_cast<int>(std::string(e.what()).size());
  }
}
