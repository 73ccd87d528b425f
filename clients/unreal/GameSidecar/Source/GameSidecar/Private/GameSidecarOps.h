// The Blueprint structs as the C ABI takes them: a delta batch's ops, and a run
// request as proto3 JSON (the mapping of proto/sidecar/v1: lowerCamel names).
#pragma once

#include "CoreMinimal.h"
#include "GameSidecarTypes.h"

struct game_sidecar_batch;

namespace GameSidecarOps
{
// Adds every op of `Batch` to `Out`, in FSidecarDeltaBatch's documented order.
// Returns "" or what was wrong with the first bad op (then `Out` is incomplete:
// send nothing).
FString AddToBatch(game_sidecar_batch* Out, const FSidecarDeltaBatch& Batch);

FString PersonaOp(const FSidecarPersona& Persona);
FString MoodOp(const FSidecarMood& Mood);
FString MemoryOp(const FSidecarMemory& Memory);
FString LoreCardOp(const FSidecarLoreCard& Card);

// What a run node asks for. Kind: "narrate", "dialogue", "decision", "describe", "continueStory".
struct FRunSpec
{
	FString Kind;
	FString SessionId;
	FString ActorId;
	FString Text;                 // narrate: what happened; dialogue: the line; decision: the situation
	FString SpeakerId;            // dialogue
	FString EntityId;             // describe
	FString Aspect;               // describe
	TArray<FString> EntityIds;    // narrate: the entities involved
	TArray<FString> FocusIds;     // every kind: what the prompt centres on
	FString Profile;              // "" = the session's
	TArray<FSidecarActionOption> Options;  // decision
	int32 MaxAttempts = 0;        // decision; 0 = the sidecar's default
};

// The RunRequest as proto3 JSON.
FString RunRequestJson(const FRunSpec& Spec);
}  // namespace GameSidecarOps
