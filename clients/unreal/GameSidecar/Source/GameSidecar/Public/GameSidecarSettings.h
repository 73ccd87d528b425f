// Project Settings > Plugins > Game Sidecar (DefaultGame.ini, which ships with the
// game), and Editor Preferences > Plugins > Game Sidecar (per user, never shipped).
#pragma once

#include "CoreMinimal.h"
#include "Engine/DeveloperSettings.h"
#include "GameSidecarSettings.generated.h"

// Which game instances launch a sidecar. A dedicated server is known when its
// game instance starts; whether any other instance will be a listen server or a
// client is not (it is decided later, when it hosts or connects): for a split
// between those, set bLaunchOnStart off and call Launch once the net mode is known.
UENUM()
enum class ESidecarRunsOn : uint8
{
	// Every game instance: standalone, listen server, client, dedicated server.
	Everywhere,
	// Every game instance but a dedicated server's (no subsystem there).
	AllButDedicatedServers,
	// Only a dedicated server's game instance (no subsystem elsewhere).
	DedicatedServersOnly,
};

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

	// Two standalone games of one project (PIE's separate processes, or two copies
	// of a packaged game) would share <StateFolder>, which one sidecar locks: the
	// second launch is refused STATE_DIR_LOCKED. With this on, that launch is
	// retried with <StateFolder>-2, then -3, up to -8 (StateFolder says which).
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	bool bNextStateFolderWhenLocked = true;

	// Which game instances have the subsystem (and so a sidecar).
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	ESidecarRunsOn RunsOn = ESidecarRunsOn::Everywhere;

	// Extra environment of the sidecar process that is safe to ship: this file is
	// DefaultGame.ini. Provider keys go in the per-user UGameSidecarUserSettings
	// (the editor only) or in the environment of the game's own process, which
	// the sidecar inherits.
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

	// Deadline of each unary call; 0: the library's (5000, as in every client).
	// Runs have none (cancel them).
	UPROPERTY(Config, EditAnywhere, Category = "Calls", meta = (ClampMin = "0"))
	int32 CallTimeoutMs = 0;

	// Events handed to Blueprints per frame at most (0: all queued).
	UPROPERTY(Config, EditAnywhere, Category = "Calls", meta = (ClampMin = "0"))
	int32 MaxEventsPerFrame = 0;
};

// Editor Preferences > Plugins > Game Sidecar: per user (Saved/Config, never in a
// package or under source control), for what must not ship, such as a provider
// key for trying a cloud model in PIE. Read only in editor builds.
UCLASS(Config = EditorPerProjectUserSettings, meta = (DisplayName = "Game Sidecar (this user)"))
class GAMESIDECAR_API UGameSidecarUserSettings : public UDeveloperSettings
{
	GENERATED_BODY()

public:
	virtual FName GetContainerName() const override { return TEXT("Editor"); }
	virtual FName GetCategoryName() const override { return TEXT("Plugins"); }

	// Added to the sidecar's environment in the editor (after the project's
	// Environment, so these win): OPENAI_API_KEY=..., and the like.
	UPROPERTY(Config, EditAnywhere, Category = "Launch")
	TMap<FString, FString> SecretEnvironment;
};
