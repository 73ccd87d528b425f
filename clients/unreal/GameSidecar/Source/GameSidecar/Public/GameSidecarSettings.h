// Project Settings > Plugins > Game Sidecar (DefaultGame.ini).
#pragma once

#include "CoreMinimal.h"
#include "Engine/DeveloperSettings.h"
#include "GameSidecarSettings.generated.h"

UCLASS(Config = Game, DefaultConfig, meta = (DisplayName = "Game Sidecar"))
class GAMESIDECAR_API UGameSidecarSettings : public UDeveloperSettings
{
	GENERATED_BODY()

public:
	// Project Settings > Plugins > Game Sidecar: the engine would put a
	// UDeveloperSettings under the project's own category (Game).
	virtual FName GetCategoryName() const override { return TEXT("Plugins"); }

	// The sidecar executable. Empty: the plugin's staged copy,
	// <Plugin>/Sidecar/<Platform>/game-sidecar/game-sidecar(.exe). A relative path
	// is relative to the project folder.
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	FString Executable;

	// sidecar.toml (--config); relative to the project folder. Empty: none.
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	FString ConfigFile;

	// Where the sidecar keeps its sessions (--state-dir); relative to the project's
	// Saved folder. Empty: no state folder (sessions live in memory only).
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	FString StateFolder = TEXT("GameSidecar");

	// PIE instance N uses <StateFolder>/PIE-<N>: one sidecar locks one state folder,
	// so several PIE clients sharing one would be refused (STATE_DIR_LOCKED).
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	bool bStateFolderPerPIEInstance = true;

	// Extra environment of the sidecar process (e.g. provider keys for a dev build).
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	TMap<FString, FString> Environment;

	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	TArray<FString> ExtraArguments;

	// Launch when the game instance starts (otherwise call Launch yourself).
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	bool bLaunchOnStart = true;

	UPROPERTY(Config, EditAnywhere, Category = "Launch", meta = (ClampMin = "1000"))
	int32 HandshakeTimeoutMs = 15000;

	// Restart after an exit the game did not ask for: at most MaxRestarts within
	// RestartWindowMs, the n-th after RestartBackoffInitialMs * 2^(n-1) (at most
	// RestartBackoffMaxMs). 0 (the default: opt in, as in every client and the
	// Unity host): no restart (State Failed, OnExited tells why). 3 is a good
	// value. Sessions survive a restart only with a StateFolder.
	UPROPERTY(Config, EditAnywhere, Category = "Recovery", meta = (ClampMin = "0"))
	int32 MaxRestarts = 0;
	UPROPERTY(Config, EditAnywhere, Category = "Recovery", meta = (ClampMin = "0"))
	int32 RestartWindowMs = 60000;
	UPROPERTY(Config, EditAnywhere, Category = "Recovery", meta = (ClampMin = "0"))
	int32 RestartBackoffInitialMs = 250;
	UPROPERTY(Config, EditAnywhere, Category = "Recovery", meta = (ClampMin = "0"))
	int32 RestartBackoffMaxMs = 5000;

	// Deadline of each unary call; runs have none (cancel them).
	UPROPERTY(Config, EditAnywhere, Category = "Calls", meta = (ClampMin = "0"))
	int32 CallTimeoutMs = 30000;

	// Events handed to Blueprints per frame at most (0: all queued).
	UPROPERTY(Config, EditAnywhere, Category = "Calls", meta = (ClampMin = "0"))
	int32 MaxEventsPerFrame = 0;
};
