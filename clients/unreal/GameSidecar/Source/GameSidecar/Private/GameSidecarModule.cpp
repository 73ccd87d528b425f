// The module: on Windows, loads the delay-loaded game_sidecar.dll from where the
// Build.cs staged it before any of its functions is called, and records whether
// it could.
#include "GameSidecarModule.h"

#include "GameSidecarLog.h"
#include "Interfaces/IPluginManager.h"
#include "Misc/Paths.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

DEFINE_LOG_CATEGORY(LogGameSidecar);

namespace
{
#if PLATFORM_WINDOWS
// Set by StartupModule: until it has found the DLL, nothing may call into it.
bool GLibraryLoaded = false;
FString GLibraryError = TEXT("the GameSidecar module has not started");
#else
// Linked at startup (Linux): the process would not have started without it.
bool GLibraryLoaded = true;
FString GLibraryError;
#endif
}  // namespace

bool FGameSidecarModule::IsLibraryLoaded() { return GLibraryLoaded; }

FString FGameSidecarModule::LibraryError() { return GLibraryError; }

void FGameSidecarModule::StartupModule()
{
#if PLATFORM_WINDOWS
#if defined(GAME_SIDECAR_DLL_NAME)
	// RuntimeDependencies put it next to the binary that holds this module:
	// the plugin's Binaries/Win64 in the editor, the game's in a package.
	TArray<FString> Candidates;
	TSharedPtr<IPlugin> Plugin = IPluginManager::Get().FindPlugin(TEXT("GameSidecar"));
	if (Plugin.IsValid())
	{
		Candidates.Add(FPaths::Combine(Plugin->GetBaseDir(), TEXT("Binaries/Win64"), GAME_SIDECAR_DLL_NAME));
	}
	Candidates.Add(FPaths::Combine(FPlatformProcess::BaseDir(), GAME_SIDECAR_DLL_NAME));
	FString Tried;
	for (const FString& Path : Candidates)
	{
		Tried += TEXT(" ") + Path;
		if (FPaths::FileExists(Path))
		{
			LibraryHandle = FPlatformProcess::GetDllHandle(*Path);
			if (LibraryHandle != nullptr)
			{
				break;
			}
		}
	}
	GLibraryLoaded = LibraryHandle != nullptr;
	GLibraryError = GLibraryLoaded ? FString()
	                               : FString(GAME_SIDECAR_DLL_NAME) + TEXT(" was not found or did not load; looked at:") + Tried;
#else
	GLibraryError = TEXT("this build has no game_sidecar.dll (the GameSidecarLibrary module found no lib/Win64)");
#endif
	if (!GLibraryLoaded)
	{
		UE_LOG(LogGameSidecar, Error, TEXT("GameSidecar: %s; the sidecar cannot be used"), *GLibraryError);
	}
#endif
}

void FGameSidecarModule::ShutdownModule()
{
	if (GLibraryLoaded)
	{
		// A release in progress runs the library's code: unloading it under that
		// thread would crash the editor on its way out.
		const int Pending = game_sidecar_wait_released(10000);
		if (Pending > 0)
		{
			UE_LOG(LogGameSidecar, Warning, TEXT("GameSidecar: %d sidecar(s) still stopping after 10 s; the library stays loaded"), Pending);
			return;
		}
	}
	if (LibraryHandle != nullptr)
	{
		FPlatformProcess::FreeDllHandle(LibraryHandle);
		LibraryHandle = nullptr;
		GLibraryLoaded = false;
	}
}

IMPLEMENT_MODULE(FGameSidecarModule, GameSidecar)
