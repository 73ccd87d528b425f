// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class UGameInstance;
class UWorld : public UObject {
 public:
  UGameInstance* GetGameInstance() const { return OwningGameInstance; }
  virtual UWorld* GetWorld() const override { return const_cast<UWorld*>(this); }
  UGameInstance* OwningGameInstance = nullptr;
};
