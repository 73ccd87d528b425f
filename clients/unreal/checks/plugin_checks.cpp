// Compile-time checks of the plugin against the stand-in engine headers
// (scripts/test_unreal.sh compiles this with them): facts of the plugin's C++ that
// the stand-ins can prove without Unreal. Each static_assert names the issue item.
#include <type_traits>

#include "GameSidecarLog.h"
#include "GameSidecarSettings.h"

// Issue 32 item 4 (packaging): the settings page sits under Plugins, not Game, so
// UGameSidecarSettings overrides UDeveloperSettings::GetCategoryName.
static_assert(!std::is_same_v<decltype(&UGameSidecarSettings::GetCategoryName),
                              decltype(&UDeveloperSettings::GetCategoryName)>,
              "UGameSidecarSettings must override GetCategoryName (Project Settings > Plugins)");

// Issue 32 Build item 5: the plugin logs to LogGameSidecar, a category other modules
// can use (it logged to LogTemp, and the sidecar's own log reached only OnLog).
inline void LogsToTheSidecarCategory() { UE_LOG(LogGameSidecar, Log, TEXT("another module's line")); }
