// LogGameSidecar: the plugin's log category, and the sidecar's own log lines (its
// JSON stderr, at their level) in the Output Log. Other modules may log to it too:
// #include "GameSidecarLog.h".
#pragma once

#include "CoreMinimal.h"

GAMESIDECAR_API DECLARE_LOG_CATEGORY_EXTERN(LogGameSidecar, Log, All);
