// STAND-IN ONLY, no Unreal counterpart: what a test driver sets or reads of the
// imitation engine (see CoreMinimal.h) that the engine would decide itself.
#pragma once

#include "CoreMinimal.h"
#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "Subsystems/GameInstanceSubsystem.h"

namespace StandIn {
// FPaths::ProjectDir() and ProjectSavedDir() (default: BaseDir(), and <ProjectDir>/Saved/).
void SetProjectDir(const FString& Dir);
void SetProjectSavedDir(const FString& Dir);
// What IsRunningDedicatedServer() answers (default false).
void SetRunningDedicatedServer(bool bDedicated);

// A game instance with its world and world context, as the engine starts one.
UGameInstance* NewGameInstance(EWorldType::Type WorldType = EWorldType::Game, int32 PIEInstance = -1,
                               bool bRunAsDedicated = false);
// What the engine's subsystem collection does with a subsystem it created:
// GetSubsystem<T>() of its game instance finds it from now on.
void AddSubsystem(UGameInstance* Instance, USubsystem* Subsystem);
// Whether the game instance keeps Object (RegisterReferencedObject, e.g. an
// async action between RegisterWithGameInstance and SetReadyToDestroy).
bool IsReferenced(const UGameInstance* Instance, const UObject* Object);

// UE_LOG lines up to this verbosity go to stderr (default: all).
void SetLogPrintLevel(ELogVerbosity::Type Level);
// Called with every UE_LOG line, printed or not.
using FLogHook = std::function<void(const char* Category, ELogVerbosity::Type Verbosity, const FString& Text)>;
void SetLogHook(FLogHook Hook);
}  // namespace StandIn
