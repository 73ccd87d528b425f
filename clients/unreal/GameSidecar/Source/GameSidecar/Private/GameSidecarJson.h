// The JSON the library hands the plugin (a run event's whole RunEvent, a
// WRITE_SETTLED record) read into the Blueprint structs, in one place.
#pragma once

#include "CoreMinimal.h"
#include "GameSidecarTypes.h"

namespace GameSidecarJson
{
// RUN_ACTION's event_json ({"action": {"actionId", "index", "message", "mentionedIds", "parameters"}}).
FSidecarDecision Decision(const FString& EventJson);
// RUN_ATTEMPT_REJECTED's event_json ({"rejected": {"attempt", "reason"}}): the attempt, and the reason.
int32 RejectedAttempt(const FString& EventJson, FString& OutReason);
// A WRITE_SETTLED event's JSON (game_sidecar_c.h, game_sidecar_track_async).
FSidecarWritesSettled WritesSettled(const FString& Json);
// A JSON string field of the top-level object ("" when absent), e.g. ExportSession's "blob".
FString StringField(const FString& Json, const FString& Field);
}  // namespace GameSidecarJson
