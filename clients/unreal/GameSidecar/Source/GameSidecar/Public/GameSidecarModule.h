// The module, and the one fact it tells the rest of the plugin: whether
// libgame_sidecar is usable in this process.
#pragma once

#include "CoreMinimal.h"
#include "Modules/ModuleManager.h"

class GAMESIDECAR_API FGameSidecarModule : public IModuleInterface
{
public:
	// On Win64, loads the delay-loaded game_sidecar.dll from where the Build.cs
	// staged it, before any of its functions is called.
	virtual void StartupModule() override;
	// Waits (up to 10 s) for the sidecars UGameSidecarSubsystem::Deinitialize
	// handed over to finish stopping, then unloads the DLL.
	virtual void ShutdownModule() override;

	// False on Win64 when game_sidecar.dll was not found or did not load: the
	// subsystem then calls nothing of it (a delay-load thunk on a missing DLL
	// ends the process) and every call fails with LIBRARY_NOT_LOADED. Always
	// true where the library is linked (Linux): the process could not have
	// started without it.
	static bool IsLibraryLoaded();
	// Why it is not loaded ("" when it is).
	static FString LibraryError();

private:
	void* LibraryHandle = nullptr;
};
