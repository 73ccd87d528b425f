// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class UGameInstance;
class FSubsystemCollectionBase {};
class USubsystem : public UObject {
 public:
  virtual bool ShouldCreateSubsystem(UObject* Outer) const;
  virtual void Initialize(FSubsystemCollectionBase& Collection);
  virtual void Deinitialize();
};
class UGameInstanceSubsystem : public USubsystem {
 public:
  UGameInstance* GetGameInstance() const;
};
