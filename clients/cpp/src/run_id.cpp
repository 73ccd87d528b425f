#include "run_id.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>

namespace game_sidecar {
namespace internal {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // splitmix64's increment

uint64_t Seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

uint64_t Mix(uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string NewRunId() {
  static std::atomic<uint64_t> state{Seed()};
  const uint64_t value = Mix(state.fetch_add(kGolden, std::memory_order_relaxed) + kGolden);
  char buf[24];
  std::snprintf(buf, sizeof buf, "run-%016llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace internal
}  // namespace game_sidecar
