// Tracked writes across a restart, as Blueprints see them (docs/protocol.md §1,
// "Tracked writes across a restart"): a write answered WRITE_KEPT is sent by the
// library once the sidecar is back, and OnWriteSettled says how it landed.
#pragma once

#include "CoreMinimal.h"
#include "GameSidecarWriteTypes.generated.h"

// How one kept write of a tracked session landed after a restart.
UENUM(BlueprintType)
enum class ESidecarWriteOutcome : uint8
{
	// It had been applied before the crash: the sidecar replayed its delta ID.
	Replayed,
	// It had not: the resend applied it.
	AppliedNow,
	// It is not in the session (Status says why): the game decides.
	NotApplied,
};

USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarSettledWrite
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString DeltaId;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	ESidecarWriteOutcome Outcome = ESidecarWriteOutcome::AppliedNow;
	// The revision it produced (Replayed: when first applied); 0 for the batch
	// that was in flight when writes held behind it followed (the record carries
	// only the revision after the last).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int64 Revision = 0;
	// NotApplied: why.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString Reason;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString Message;
};

// What a restart did to one tracked session's kept writes (OnWriteSettled).
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarWritesSettled
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString SessionId;
	// False: the new process had lost the session; resync it (ReplaceState).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	bool bResumed = true;
	// The tracked revision now.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int64 Revision = 0;
	// The batch that was in flight, then the ones written meanwhile, in order.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	TArray<FSidecarSettledWrite> Writes;
};
