// UGameSidecarSubsystem: its life with the game instance (create, tick, release),
// the one state it announces, and the routing of the library's events to the
// handler of the call or run each belongs to. The launch is GameSidecarLaunch.cpp;
// the calls, GameSidecarSessions.cpp.
#include "GameSidecarSubsystem.h"

#include "Dom/JsonObject.h"
#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "GameSidecarLog.h"
#include "GameSidecarJson.h"
#include "GameSidecarModule.h"
#include "GameSidecarSettings.h"
#include "GameSidecarText.h"
#include "Serialization/JsonReader.h"
#include "Serialization/JsonSerializer.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

using GameSidecarText::FromUtf8;
using GameSidecarText::ToUtf8;

FSidecarStatus UGameSidecarSubsystem::ToStatus(const game_sidecar_result* Result)
{
	FSidecarStatus Status;
	Status.Code = game_sidecar_result_code(Result);
	Status.Reason = FromUtf8(game_sidecar_result_reason(Result));
	Status.Message = FromUtf8(game_sidecar_result_message(Result));
	Status.MetadataJson = FromUtf8(game_sidecar_result_metadata_json(Result));
	return Status;
}

FSidecarExit UGameSidecarSubsystem::ToExit(const FString& ExitJson)
{
	FSidecarExit Exit;
	TSharedPtr<FJsonObject> Object;
	const TSharedRef<TJsonReader<>> Reader = TJsonReaderFactory<>::Create(ExitJson);
	if (!FJsonSerializer::Deserialize(Reader, Object) || !Object.IsValid())
	{
		Exit.Description = ExitJson;
		return Exit;
	}
	// exitCode / signal are null when not set: TryGetNumberField is false then.
	Exit.bHasExitCode = Object->TryGetNumberField(TEXT("exitCode"), Exit.ExitCode);
	Exit.bHasSignal = Object->TryGetNumberField(TEXT("signal"), Exit.Signal);
	Object->TryGetBoolField(TEXT("requested"), Exit.bRequested);
	Object->TryGetBoolField(TEXT("hung"), Exit.bHung);
	Object->TryGetNumberField(TEXT("pid"), Exit.Pid);
	Object->TryGetStringField(TEXT("stderrTail"), Exit.StderrTail);
	Object->TryGetStringField(TEXT("description"), Exit.Description);
	return Exit;
}

bool UGameSidecarSubsystem::ShouldCreateSubsystem(UObject* Outer) const
{
	if (!Super::ShouldCreateSubsystem(Outer))
	{
		return false;
	}
	bool bDedicated = IsRunningDedicatedServer();
#if WITH_EDITOR
	// PIE's "run under one process" dedicated server is a game instance of the editor.
	const UGameInstance* Instance = Cast<UGameInstance>(Outer);
	const FWorldContext* Context = Instance ? Instance->GetWorldContext() : nullptr;
	bDedicated = bDedicated || (Context != nullptr && Context->RunAsDedicated);
#endif
	switch (GetDefault<UGameSidecarSettings>()->RunsOn)
	{
	case ESidecarRunsOn::AllButDedicatedServers: return !bDedicated;
	case ESidecarRunsOn::DedicatedServersOnly: return bDedicated;
	case ESidecarRunsOn::Everywhere: break;
	}
	return true;
}

bool UGameSidecarSubsystem::IsLibraryLoaded() const { return FGameSidecarModule::IsLibraryLoaded(); }

int32 UGameSidecarSubsystem::GetSidecarPid() const { return Sidecar != nullptr ? game_sidecar_pid(Sidecar) : 0; }

FSidecarStatus UGameSidecarSubsystem::NoLibraryStatus() const
{
	return FSidecarStatus::Local(
	    GAME_SIDECAR_FAILED_PRECONDITION, TEXT("LIBRARY_NOT_LOADED"),
	    FGameSidecarModule::IsLibraryLoaded()
	        ? FString(TEXT("the GameSidecar subsystem has no sidecar object (deinitialized, or out of memory)"))
	        : FGameSidecarModule::LibraryError());
}

void UGameSidecarSubsystem::Initialize(FSubsystemCollectionBase& Collection)
{
	Super::Initialize(Collection);
	// Nothing of the library may be called when it is not loaded (Win64's
	// delay-load thunk would end the process): no object, and every call refused.
	Sidecar = FGameSidecarModule::IsLibraryLoaded() ? game_sidecar_create() : nullptr;
	if (Sidecar != nullptr)
	{
		game_sidecar_set_lifecycle_callback(Sidecar, &UGameSidecarSubsystem::DispatchLifecycle, this);
	}
	BaseStateFolder = ResolveStateFolder();
	StateFolder = BaseStateFolder;
	if (Sidecar == nullptr)
	{
		SetState(ESidecarState::Failed, NoLibraryStatus());
		return;
	}
	if (GetDefault<UGameSidecarSettings>()->bLaunchOnStart)
	{
		Launch();
	}
}

void UGameSidecarSubsystem::Deinitialize()
{
	// The game instance is going away: queued events and results are dropped with
	// their handlers, and the object goes to the library, which stops the sidecar
	// on a thread of its own (a hung one takes the graces: seconds, not on this
	// thread). The module's shutdown waits for that before the library unloads.
	game_sidecar_host* Old = Sidecar;
	Sidecar = nullptr;
	Handlers.Empty();
	LocalResults.Empty();
	HeldUntilStarted.Empty();
	if (Old != nullptr)
	{
		game_sidecar_release(Old);
	}
	State = ESidecarState::Stopped;
	Super::Deinitialize();
}

void UGameSidecarSubsystem::Tick(float DeltaTime)
{
	if (LocalResults.Num() > 0)
	{
		// Moved out first: a result's delegate may make calls, which add to the list.
		TArray<TFunction<void()>> Ready = MoveTemp(LocalResults);
		LocalResults.Empty();
		for (TFunction<void()>& Deliver : Ready)
		{
			Deliver();
		}
	}
	if (Sidecar != nullptr)
	{
		game_sidecar_drain(Sidecar, static_cast<size_t>(FMath::Max(0, GetDefault<UGameSidecarSettings>()->MaxEventsPerFrame)));
	}
}

void UGameSidecarSubsystem::DeliverLater(TFunction<void()> Deliver) { LocalResults.Add(MoveTemp(Deliver)); }

void UGameSidecarSubsystem::WhenStarted(TFunction<void(const FSidecarStatus* Failed)> Work)
{
	if (Sidecar == nullptr)
	{
		DeliverLater([Work, Status = NoLibraryStatus()]() { Work(&Status); });
	}
	else if (State == ESidecarState::Starting)
	{
		HeldUntilStarted.Add(MoveTemp(Work));
	}
	else
	{
		Work(nullptr);
	}
}

void UGameSidecarSubsystem::ReleaseHeld(const FSidecarStatus* Failed)
{
	TArray<TFunction<void(const FSidecarStatus*)>> Held = MoveTemp(HeldUntilStarted);
	HeldUntilStarted.Empty();
	for (TFunction<void(const FSidecarStatus*)>& Work : Held)
	{
		Work(Failed);
	}
}

TStatId UGameSidecarSubsystem::GetStatId() const
{
	RETURN_QUICK_DECLARE_CYCLE_STAT(UGameSidecarSubsystem, STATGROUP_Tickables);
}

void UGameSidecarSubsystem::SetState(ESidecarState NewState, const FSidecarStatus& Status)
{
	if (NewState == State)
	{
		return;
	}
	State = NewState;
	OnStateChanged.Broadcast(NewState, Status);
}

void UGameSidecarSubsystem::Stop()
{
	if (Sidecar == nullptr)
	{
		return;
	}
	const uint64 Handle = game_sidecar_stop_async(Sidecar, &UGameSidecarSubsystem::Dispatch, this);
	Handlers.Add(Handle, [this](const game_sidecar_event& Event) {
		SetState(ESidecarState::Stopped, ToStatus(Event.result));
		return true;
	});
}

void UGameSidecarSubsystem::Dispatch(const game_sidecar_event* Event, void* UserData)
{
	// Runs inside game_sidecar_drain, i.e. in Tick, on the game thread.
	UGameSidecarSubsystem* Self = static_cast<UGameSidecarSubsystem*>(UserData);
	const FEventHandler* Found = Self->Handlers.Find(Event->handle);
	if (Found == nullptr)
	{
		return;
	}
	// A copy: the handler may start calls, which add to (and may reallocate) the map.
	FEventHandler Handler = *Found;
	if (Handler(*Event))
	{
		Self->Handlers.Remove(Event->handle);
	}
}

void UGameSidecarSubsystem::DispatchLog(const game_sidecar_event* Event, void* UserData)
{
	UGameSidecarSubsystem* Self = static_cast<UGameSidecarSubsystem*>(UserData);
	const FString Line = FromUtf8(Event->text);
	// The sidecar's own log (one JSON line each: ts, level, msg, fields) in the Output
	// Log at its level, besides OnLog for Blueprints. Read as JSON: the sidecar
	// writes `"level": "error"` (with a space), which a text match missed.
	const FString Level = GameSidecarJson::StringField(Line, TEXT("level"));
	if (Level.Equals(TEXT("error")) || Level.Equals(TEXT("critical")))
	{
		UE_LOG(LogGameSidecar, Error, TEXT("sidecar: %s"), *Line);
	}
	else if (Level.Equals(TEXT("warning")))
	{
		UE_LOG(LogGameSidecar, Warning, TEXT("sidecar: %s"), *Line);
	}
	else
	{
		UE_LOG(LogGameSidecar, Log, TEXT("sidecar: %s"), *Line);
	}
	Self->OnLog.Broadcast(Line);
}

void UGameSidecarSubsystem::DispatchLifecycle(const game_sidecar_event* Event, void* UserData)
{
	// Found on the library's supervisor thread; delivered here, inside the drain (Tick).
	UGameSidecarSubsystem* Self = static_cast<UGameSidecarSubsystem*>(UserData);
	if (Event->kind == GAME_SIDECAR_EVENT_EXIT)
	{
		const FSidecarExit Exit = ToExit(FromUtf8(Event->event_json));
		if (!Exit.bRequested)
		{
			UE_LOG(LogGameSidecar, Error, TEXT("sidecar exited: %s"), *Exit.Description);
		}
		Self->OnExited.Broadcast(Exit);
		return;
	}
	if (Event->kind != GAME_SIDECAR_EVENT_STATUS)
	{
		return;
	}
	ESidecarState NewState = Self->State;
	switch (Event->status)
	{
	case GAME_SIDECAR_STATUS_STARTING: NewState = ESidecarState::Starting; break;
	case GAME_SIDECAR_STATUS_READY: NewState = ESidecarState::Ready; break;
	case GAME_SIDECAR_STATUS_RESTARTING: NewState = ESidecarState::Restarting; break;
	case GAME_SIDECAR_STATUS_STOPPED: NewState = ESidecarState::Stopped; break;
	case GAME_SIDECAR_STATUS_FAILED: NewState = ESidecarState::Failed; break;
	default: break;
	}
	Self->SetState(NewState, FSidecarStatus());  // once per change (SetState)
}

uint64 UGameSidecarSubsystem::StartRunJson(const FString& RequestJson, FEventHandler Handler)
{
	if (Sidecar == nullptr)
	{
		return 0;
	}
	const uint64 Run = game_sidecar_run_start_json(Sidecar, ToUtf8(RequestJson).c_str(), &UGameSidecarSubsystem::Dispatch, this);
	Handlers.Add(Run, MoveTemp(Handler));
	return Run;
}

void UGameSidecarSubsystem::CancelRun(uint64 Run)
{
	if (Sidecar != nullptr && Run != 0)
	{
		game_sidecar_run_cancel(Sidecar, Run);
	}
}
