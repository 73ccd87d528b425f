#include "GameSidecarSubsystem.h"

#include <string>
#include <vector>

#include "Dom/JsonObject.h"
#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "GameSidecarLog.h"
#include "GameSidecarJson.h"
#include "GameSidecarModule.h"
#include "GameSidecarOps.h"
#include "GameSidecarSettings.h"
#include "GameSidecarText.h"
#include "HAL/FileManager.h"
#include "Interfaces/IPluginManager.h"
#include "Misc/Base64.h"
#include "Misc/Paths.h"
#include "Serialization/JsonReader.h"
#include "Serialization/JsonSerializer.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

#if PLATFORM_LINUX || PLATFORM_MAC
#include <sys/stat.h>
#endif


using GameSidecarText::FromUtf8;
using GameSidecarText::ToUtf8;

namespace
{
// The folder the Build.cs stages the sidecar from: <Plugin>/Sidecar/<Platform>/.
const TCHAR* PlatformFolder()
{
#if PLATFORM_WINDOWS
	return TEXT("Win64");
#elif PLATFORM_MAC
	return TEXT("Mac");
#else
	return TEXT("Linux");
#endif
}

FString ResolveExecutable(const UGameSidecarSettings* Settings)
{
	FString Exe = Settings->Executable;
	if (Exe.IsEmpty())
	{
		TSharedPtr<IPlugin> Plugin = IPluginManager::Get().FindPlugin(TEXT("GameSidecar"));
		const FString Base = Plugin.IsValid() ? Plugin->GetBaseDir() : FPaths::ProjectPluginsDir() / TEXT("GameSidecar");
		Exe = Base / TEXT("Sidecar") / PlatformFolder() / TEXT("game-sidecar/game-sidecar");
#if PLATFORM_WINDOWS
		Exe += TEXT(".exe");
#endif
	}
	else if (FPaths::IsRelative(Exe))
	{
		Exe = FPaths::ProjectDir() / Exe;
	}
	return FPaths::ConvertRelativePathToFull(Exe);
}

// Staging a Linux build from Windows (or copying it through a zip) loses the
// executable bit; the spawn would fail with "permission denied".
void RestoreExecutableBit(const std::string& Exe)
{
#if PLATFORM_LINUX || PLATFORM_MAC
	struct stat Info;
	if (stat(Exe.c_str(), &Info) != 0 || (Info.st_mode & S_IXUSR) != 0)
	{
		return;  // missing (the launch says so) or already executable
	}
	const mode_t Mode = Info.st_mode | S_IXUSR | ((Info.st_mode & S_IRGRP) ? S_IXGRP : 0) | ((Info.st_mode & S_IROTH) ? S_IXOTH : 0);
	if (chmod(Exe.c_str(), Mode) == 0)
	{
		UE_LOG(LogGameSidecar, Log, TEXT("restored the executable bit of %s (staging had lost it)"), *FromUtf8(Exe.c_str()));
	}
	else
	{
		UE_LOG(LogGameSidecar, Error, TEXT("%s is not executable and its mode cannot be changed here"), *FromUtf8(Exe.c_str()));
	}
#else
	(void)Exe;
#endif
}

// Names that DefaultGame.ini would ship with the game.
bool LooksSecret(const FString& Name)
{
	for (const TCHAR* Part : {TEXT("KEY"), TEXT("TOKEN"), TEXT("SECRET"), TEXT("PASSWORD")})
	{
		if (Name.ToUpper().Contains(Part))
		{
			return true;
		}
	}
	return false;
}

constexpr int32 MaxLockedRetries = 7;  // <StateFolder>-2 ... -8
}  // namespace

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
	FSidecarStatus Status;
	Status.Code = GAME_SIDECAR_FAILED_PRECONDITION;
	Status.Reason = TEXT("LIBRARY_NOT_LOADED");
	Status.Message = FGameSidecarModule::IsLibraryLoaded()
	                     ? FString(TEXT("the GameSidecar subsystem has no sidecar object (deinitialized, or out of memory)"))
	                     : FGameSidecarModule::LibraryError();
	Status.MetadataJson = TEXT("{}");
	return Status;
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

FString UGameSidecarSubsystem::ResolveStateFolder() const
{
	const UGameSidecarSettings* Settings = GetDefault<UGameSidecarSettings>();
	if (Settings->StateFolder.IsEmpty())
	{
		return FString();
	}
	FString Folder = FPaths::IsRelative(Settings->StateFolder) ? FPaths::ProjectSavedDir() / Settings->StateFolder
	                                                            : Settings->StateFolder;
#if WITH_EDITOR
	// Each PIE client is its own game instance with its own sidecar; one state
	// folder can be locked by one sidecar only.
	const UGameInstance* Instance = GetGameInstance();
	const FWorldContext* Context = Instance ? Instance->GetWorldContext() : nullptr;
	if (Settings->bStateFolderPerPIEInstance && Context != nullptr && Context->WorldType == EWorldType::PIE)
	{
		Folder = Folder / FString::Printf(TEXT("PIE-%d"), Context->PIEInstance);
	}
#endif
	return FPaths::ConvertRelativePathToFull(Folder);
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

void UGameSidecarSubsystem::Launch()
{
	if (Sidecar == nullptr)
	{
		SetState(ESidecarState::Failed, NoLibraryStatus());
		return;
	}
	if (State == ESidecarState::Starting || State == ESidecarState::Ready || State == ESidecarState::Restarting)
	{
		return;
	}
	LockedRetries = 0;
	StateFolder = BaseStateFolder;
	SetState(ESidecarState::Starting, FSidecarStatus());
	StartProcess();
}

void UGameSidecarSubsystem::StartProcess()
{
	const UGameSidecarSettings* Settings = GetDefault<UGameSidecarSettings>();
	const std::string Exe = ToUtf8(ResolveExecutable(Settings));
	RestoreExecutableBit(Exe);
	std::vector<std::string> Args = {"serve"};
	if (!Settings->ConfigFile.IsEmpty())
	{
		const FString Config = FPaths::IsRelative(Settings->ConfigFile) ? FPaths::ProjectDir() / Settings->ConfigFile
		                                                                 : Settings->ConfigFile;
		Args.push_back("--config");
		Args.push_back(ToUtf8(FPaths::ConvertRelativePathToFull(Config)));
	}
	if (!StateFolder.IsEmpty())
	{
		IFileManager::Get().MakeDirectory(*StateFolder, true);
		Args.push_back("--state-dir");
		Args.push_back(ToUtf8(StateFolder));
	}
	for (const FString& Extra : Settings->ExtraArguments)
	{
		Args.push_back(ToUtf8(Extra));
	}
	std::vector<std::string> Env;
	for (const TPair<FString, FString>& Pair : Settings->Environment)
	{
		if (LooksSecret(Pair.Key))
		{
			UE_LOG(LogGameSidecar, Warning,
			       TEXT("Environment entry %s looks like a secret, and DefaultGame.ini ships with the game: move it to "
			            "Editor Preferences > Plugins > Game Sidecar (this user), or to the game process's environment"),
			       *Pair.Key);
		}
		Env.push_back(ToUtf8(Pair.Key) + "=" + ToUtf8(Pair.Value));
	}
#if WITH_EDITOR
	// Per user, never shipped (UGameSidecarUserSettings); after the project's, so these win.
	for (const TPair<FString, FString>& Pair : GetDefault<UGameSidecarUserSettings>()->SecretEnvironment)
	{
		Env.push_back(ToUtf8(Pair.Key) + "=" + ToUtf8(Pair.Value));
	}
#endif
	std::vector<const char*> ArgPtrs, EnvPtrs;
	for (const std::string& A : Args) ArgPtrs.push_back(A.c_str());
	for (const std::string& E : Env) EnvPtrs.push_back(E.c_str());

	game_sidecar_launch_options Options = {};
	Options.struct_size = sizeof(Options);
	Options.executable = Exe.c_str();
	Options.args = ArgPtrs.data();
	Options.arg_count = ArgPtrs.size();
	Options.env = EnvPtrs.empty() ? nullptr : EnvPtrs.data();
	Options.env_count = EnvPtrs.size();
	Options.handshake_timeout_ms = Settings->HandshakeTimeoutMs;
	Options.call_timeout_ms = Settings->CallTimeoutMs;  // 0: the library's (5000)
	Options.on_log = &UGameSidecarSubsystem::DispatchLog;
	Options.log_user_data = this;
	Options.restart_max = Settings->MaxRestarts;
	Options.restart_window_ms = Settings->RestartWindowMs;
	Options.restart_backoff_initial_ms = Settings->RestartBackoffInitialMs;
	Options.restart_backoff_max_ms = Settings->RestartBackoffMaxMs;
	// The options are copied by the call: the strings above may go now.
	const uint64 Handle = game_sidecar_launch_async(Sidecar, &Options, &UGameSidecarSubsystem::Dispatch, this);
	Handlers.Add(Handle, [this](const game_sidecar_event& Event) {
		const FSidecarStatus Status = ToStatus(Event.result);
		if (!Status.IsOk() && Status.Reason == TEXT("STATE_DIR_LOCKED") && !BaseStateFolder.IsEmpty() &&
		    GetDefault<UGameSidecarSettings>()->bNextStateFolderWhenLocked && LockedRetries < MaxLockedRetries)
		{
			// Another standalone instance of this project holds the folder: this
			// one takes the next (still Starting: no state change to announce).
			++LockedRetries;
			StateFolder = BaseStateFolder + FString::Printf(TEXT("-%d"), LockedRetries + 1);
			UE_LOG(LogGameSidecar, Log, TEXT("state folder locked by another instance; trying %s"), *StateFolder);
			StartProcess();
			return true;
		}
		if (!Status.IsOk())
		{
			const FString Tail = FromUtf8(game_sidecar_result_stderr_tail(Event.result));
			UE_LOG(LogGameSidecar, Error, TEXT("launch failed: %s %s%s%s"), *Status.Reason, *Status.Message,
			       Tail.IsEmpty() ? TEXT("") : TEXT("\n"), *Tail);
		}
		if (Status.IsOk())
		{
			// A launch after Failed is a new process the library tracks nothing of yet.
			for (const FString& SessionId : TArray<FString>(TrackedSessions))
			{
				Track(SessionId, [SessionId](const FSidecarStatus& Tracked, int64) {
					if (!Tracked.IsOk())
					{
						UE_LOG(LogGameSidecar, Error, TEXT("could not track session %s again: %s %s"), *SessionId,
						       *Tracked.Reason, *Tracked.Message);
					}
				});
			}
		}
		SetState(Status.IsOk() ? ESidecarState::Ready : ESidecarState::Failed, Status);
		// What was asked for while Starting goes now (in the order asked), or fails as the launch did.
		ReleaseHeld(Status.IsOk() ? nullptr : &Status);
		return true;
	});
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
