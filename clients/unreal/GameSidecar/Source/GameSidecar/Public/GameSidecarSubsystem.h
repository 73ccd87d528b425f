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

	// The sidecar process's ID, 0 when none runs (game_sidecar_pid): for tools and
	// tests that must find the process from outside.
	int32 GetSidecarPid() const;

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

	// The kept writes of a tracked session settled after a restart: which landed
	// (replayed, applied now) and which did not (the game decides).
	UPROPERTY(BlueprintAssignable, Category = "Game Sidecar")
	FSidecarWritesSettledEvent OnWriteSettled;

	// Opens (creates or resumes) a session, one per save slot, and tracks it: the
	// plugin keeps its revision (GetTrackedRevision), ApplyDeltas sends each batch
	// on top of it, and across a sidecar restart the batch in flight is resent
	// under its delta ID and the writes made meanwhile are held and sent once the
	// sidecar is ready, never dropped. After a relaunch from Failed the plugin
	// tracks its sessions again by itself.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void OpenSession(const FString& SessionId, FSidecarCallDone OnDone);

	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void CloseSession(const FString& SessionId, FSidecarCallDone OnDone);

	// Applies a batch to an open (tracked) session, on top of its revision. OnDone:
	// OK with the new revision; UNAVAILABLE/WRITE_KEPT: kept, the plugin sends it
	// after the restart (never send it again; OnWriteSettled says how it landed);
	// ABORTED/WRITE_NOT_APPLIED: not applied and not to be sent (the game decides);
	// FAILED_PRECONDITION when the session was not opened here.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void ApplyDeltas(const FString& SessionId, const FSidecarDeltaBatch& Batch, FSidecarCallDone OnDone);

	// One-op batches for what shapes an NPC's voice (ApplyDeltas with just that op).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar|Voice")
	void SetPersona(const FString& SessionId, const FSidecarPersona& Persona, FSidecarCallDone OnDone);
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar|Voice")
	void SetMood(const FString& SessionId, const FSidecarMood& Mood, FSidecarCallDone OnDone);
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar|Voice")
	void AddMemory(const FString& SessionId, const FSidecarMemory& Memory, FSidecarCallDone OnDone);
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar|Voice")
	void SetLoreCard(const FString& SessionId, const FSidecarLoreCard& Card, FSidecarCallDone OnDone);

	// ApplyDeltas untracked, for a game that keeps revisions itself: BaseRevision
	// must be the session's current one (else ABORTED/STALE_REVISION); DeltaId makes
	// a resend idempotent ("" = none).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void ApplyDeltasAtRevision(const FString& SessionId, const FSidecarDeltaBatch& Batch, int64 BaseRevision,
	                           const FString& DeltaId, FSidecarCallDone OnDone);

	// The revision the sidecar last acknowledged for an open session; -1 when it is not open here.
	UFUNCTION(BlueprintPure, Category = "Game Sidecar")
	int64 GetTrackedRevision(const FString& SessionId) const;

	// The session's whole state (GetStateResponse as proto3 JSON) and its revision.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void GetState(const FString& SessionId, FSidecarJsonDone OnDone);

	// Replaces the whole state with SnapshotJson (a Snapshot as proto3 JSON, e.g.
	// the "snapshot" of GetState's JSON): a resync, or a rewind. Through the tracked
	// session when it is open, so its revision follows.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void ReplaceState(const FString& SessionId, const FString& SnapshotJson, FSidecarCallDone OnDone);

	// Save games: the session (state, transcripts, notes) as bytes for a USaveGame...
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void ExportSession(const FString& SessionId, FSidecarExportDone OnDone);

	// ...and back. Import before OpenSession: an import replaces the session whole.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void ImportSession(const TArray<uint8>& SaveData, FSidecarCallDone OnDone);

	// Any unary call with proto3 JSON (game_sidecar_call_async): Method "GetState"...
	void CallJson(const FString& Method, const FString& RequestJson,
	              TFunction<void(const FSidecarStatus&, const FString& ResponseJson, int64 Revision)> OnDone);

	// Runs Work now, or, while the sidecar is Starting, once it is Ready (Failed
	// null) or has failed (Failed: the launch's status); with no sidecar object,
	// on the next tick with NoLibraryStatus. What every call uses, so one asked
	// for during a launch (or its retry on <StateFolder>-N) is never lost.
	void WhenStarted(TFunction<void(const FSidecarStatus* Failed)> Work);

	// Runs (used by the Blueprint nodes, inside WhenStarted): a RunRequest as
	// proto3 JSON. Returns the run's handle (0 when there is no sidecar object).
	uint64 StartRunJson(const FString& RequestJson, FEventHandler Handler);
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
	static void DispatchSettled(const game_sidecar_event* Event, void* UserData);
	// Builds the batch now and sends it with Send once started (WhenStarted); a bad
	// op is a result for OnDone on the next tick, and nothing is sent.
	void SendBatch(const FSidecarDeltaBatch& Batch, const FSidecarCallDone& OnDone,
	               TFunction<uint64(struct game_sidecar_batch*)> Send);
	void ReleaseHeld(const FSidecarStatus* Failed);
	void Track(const FString& SessionId, TFunction<void(const FSidecarStatus&, int64)> OnDone);
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
	TArray<TFunction<void(const FSidecarStatus*)>> HeldUntilStarted;
	// The sessions OpenSession tracks, tracked again after a relaunch.
	TArray<FString> TrackedSessions;
	// The StateFolder setting resolved, before any -N of bNextStateFolderWhenLocked.
	FString BaseStateFolder;
	int32 LockedRetries = 0;
};
