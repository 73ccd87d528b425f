// STAND-IN (see CoreMinimal.h). The engine makes a subsystem when its game
// instance starts: ShouldCreateSubsystem on the class default object, then
// NewObject with the game instance as outer, then Initialize; Deinitialize when
// the instance ends. The driver does each step itself.
#pragma once
#include "CoreMinimal.h"
class UGameInstance;
class FSubsystemCollectionBase {};
class USubsystem : public UObject {
 public:
  virtual bool ShouldCreateSubsystem(UObject* Outer) const { return true; }
  virtual void Initialize(FSubsystemCollectionBase& Collection) {}
  virtual void Deinitialize() {}
};
class UGameInstanceSubsystem : public USubsystem {
 public:
  UGameInstance* GetGameInstance() const;
};
