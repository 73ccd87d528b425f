// One sidecar per game instance: launched from the project settings, drained
// on the game thread every frame (FTickableGameObject), stopped with the game
// instance. Every result reaches the game through that drain, routed to the
// callback of the call that asked for it.
#pragma once

#include "CoreMinimal.h"
#include "Subsystems/GameInstanceSubsystem.h"
#include "Tickable.h"
#include "GameSidecarTypes.h"
#include "GameSidecarSubsystem.generated.h"

struct game_sidecar_host;
struct game_sidecar_event;

UCLASS()
class GAMESIDECAR_API UGameSidecarSubsystem : public UGameInstanceSubsystem, public FTickableGameObject
{
	GENERATED_BODY()

public:
	// Called on the game thread during a drain with each event of one call or
	// run. Return true once the event was the call's last (the entry is dropped).
	using FEventHandler = TFunction<bool(const game_sidecar_event&)>;

	// UGameInstanceSubsystem. ShouldCreateSubsystem follows the RunsOn setting.
	virtual bool ShouldCreateSubsystem(UObject* Outer) const override;
	virtual void Initialize(FSubsystemCollectionBase& Collection) override;
	// Returns within the frame: the orderly stop of the sidecar (close stdin,
	// grace, terminate) finishes on the library's own thread.
	virtual void Deinitialize() override;

	// FTickableGameObject: drains the sidecar's events.
	virtual void Tick(float DeltaTime) override;
	virtual TStatId GetStatId() const override;
	virtual ETickableTickType GetTickableTickType() const override { return ETickableTickType::Conditional; }
	virtual bool IsTickable() const override { return Sidecar != nullptr || LocalResults.Num() > 0; }
	virtual bool IsTickableWhenPaused() const override { return true; }

	// Launches the sidecar without blocking (a no-op when one is starting or ready).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void Launch();

	// Stops the sidecar without blocking; OnStateChanged(Stopped) follows.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void Stop();

	UFUNCTION(BlueprintPure, Category = "Game Sidecar")
	ESidecarState GetState() const { return State; }

	// False when libgame_sidecar could not be loaded (Win64: game_sidecar.dll
	// missing): the state is then Failed and every call fails with the reason
	// LIBRARY_NOT_LOADED, on a later tick like any result.
	UFUNCTION(BlueprintPure, Category = "Game Sidecar")
	bool IsLibraryLoaded() const;

	// The --state-dir this instance uses ("" when none).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString StateFolder;

	UPROPERTY(BlueprintAssignable, Category = "Game Sidecar")
	FSidecarStateChanged OnStateChanged;

	// Each sidecar process that ended (a stop included), on the game thread,
	// before the state change it causes (Failed, Stopped or Restarting).
	UPROPERTY(BlueprintAssignable, Category = "Game Sidecar")
	FSidecarExited OnExited;

	// The sidecar's stderr (JSON log lines), on the game thread.
	UPROPERTY(BlueprintAssignable, Category = "Game Sidecar")
	FSidecarLogLine OnLog;

	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void OpenSession(const FString& SessionId, FSidecarCallDone OnDone);

	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void CloseSession(const FString& SessionId, FSidecarCallDone OnDone);

	// BaseRevision 0: no check. DeltaId: makes a resend idempotent ("" = none).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void ApplyDeltas(const FString& SessionId, const FSidecarDeltaBatch& Batch, int64 BaseRevision,
	                 const FString& DeltaId, FSidecarCallDone OnDone);

	// Any unary call with proto3 JSON (game_sidecar_call_async): Method "GetState"...
	void CallJson(const FString& Method, const FString& RequestJson,
	              TFunction<void(const FSidecarStatus&, const FString& ResponseJson, int64 Revision)> OnDone);

	// Runs (used by the Blueprint nodes). Returns the run's handle (0 when there is no sidecar object).
	uint64 StartRun(int32 Input, const FString& SessionId, const FString& ActorId, const FString& Text,
	                const FString& SpeakerId, const TArray<FSidecarActionOption>& Options, FEventHandler Handler);
	void CancelRun(uint64 Run);

	// What a call gets when there is no sidecar object to take it (the library
	// not loaded, or the subsystem deinitialized): FAILED_PRECONDITION, LIBRARY_NOT_LOADED.
	FSidecarStatus NoLibraryStatus() const;

	static FSidecarStatus ToStatus(const struct game_sidecar_result* Result);
	// The EXIT event's JSON as a struct (the fields it lacks stay at their defaults).
	static FSidecarExit ToExit(const FString& ExitJson);

private:
	static void Dispatch(const game_sidecar_event* Event, void* UserData);
	static void DispatchLog(const game_sidecar_event* Event, void* UserData);
	static void DispatchLifecycle(const game_sidecar_event* Event, void* UserData);
	FString ResolveStateFolder() const;
	// Broadcasts OnStateChanged once per change: a state the subsystem is already
	// in is not announced again (a stop's own result and its STATUS event both say Stopped).
	void SetState(ESidecarState NewState, const FSidecarStatus& Status);
	// The launch proper (Launch decides whether to, and announces Starting).
	void StartProcess();
	void OnCallResult(uint64 Handle, FSidecarCallDone OnDone);
	// A result made here, not by the library, for the next Tick: calls always
	// answer on a later tick, never inside the call that asked.
	void DeliverLater(TFunction<void()> Deliver);

	game_sidecar_host* Sidecar = nullptr;
	ESidecarState State = ESidecarState::NotStarted;
	// Per-call routing: the handle a *_async call returned -> its handler.
	TMap<uint64, FEventHandler> Handlers;
	TArray<TFunction<void()>> LocalResults;
	// The StateFolder setting resolved, before any -N of bNextStateFolderWhenLocked.
	FString BaseStateFolder;
	int32 LockedRetries = 0;
};
