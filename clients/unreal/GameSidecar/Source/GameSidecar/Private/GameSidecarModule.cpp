// The module: on Windows, loads the delay-loaded game_sidecar.dll from where the
// Build.cs staged it before any of its functions is called.
#include "CoreMinimal.h"
#include "GameSidecarLog.h"
#include "Modules/ModuleManager.h"
#include "Interfaces/IPluginManager.h"
#include "Misc/Paths.h"

DEFINE_LOG_CATEGORY(LogGameSidecar);

class FGameSidecarModule : public IModuleInterface
{
public:
	virtual void StartupModule() override
	{
#if PLATFORM_WINDOWS && defined(GAME_SIDECAR_DLL_NAME)
		// RuntimeDependencies put it next to the binary that holds this module:
		// the plugin's Binaries/Win64 in the editor, the game's in a package.
		TArray<FString> Candidates;
		TSharedPtr<IPlugin> Plugin = IPluginManager::Get().FindPlugin(TEXT("GameSidecar"));
		if (Plugin.IsValid())
		{
			Candidates.Add(FPaths::Combine(Plugin->GetBaseDir(), TEXT("Binaries/Win64"), GAME_SIDECAR_DLL_NAME));
		}
		Candidates.Add(FPaths::Combine(FPlatformProcess::BaseDir(), GAME_SIDECAR_DLL_NAME));
		for (const FString& Path : Candidates)
		{
			if (FPaths::FileExists(Path))
			{
				LibraryHandle = FPlatformProcess::GetDllHandle(*Path);
				break;
			}
		}
		if (LibraryHandle == nullptr)
		{
			UE_LOG(LogGameSidecar, Error, TEXT("GameSidecar: %s not found; the sidecar cannot be used"), GAME_SIDECAR_DLL_NAME);
		}
#endif
	}

	virtual void ShutdownModule() override
	{
		if (LibraryHandle != nullptr)
		{
			FPlatformProcess::FreeDllHandle(LibraryHandle);
			LibraryHandle = nullptr;
		}
	}

private:
	void* LibraryHandle = nullptr;
};

IMPLEMENT_MODULE(FGameSidecarModule, GameSidecar)
