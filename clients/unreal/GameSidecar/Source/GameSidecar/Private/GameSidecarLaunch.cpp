// UGameSidecarSubsystem's launch: where the sidecar is (the staged copy or the
// setting), its arguments, environment and state folder (the next one when another
// instance holds it), the executable bit staging may have lost, and the handshake's
// outcome.
#include "GameSidecarSubsystem.h"

#include <string>
#include <vector>

#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "GameSidecarLog.h"
#include "GameSidecarSettings.h"
#include "GameSidecarText.h"
#include "HAL/FileManager.h"
#include "Interfaces/IPluginManager.h"
#include "Misc/Paths.h"

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
