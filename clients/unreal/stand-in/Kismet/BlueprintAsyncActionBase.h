// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class UBlueprintAsyncActionBase : public UObject {
 public:
  virtual void Activate();
  virtual void RegisterWithGameInstance(const UObject* WorldContextObject);
  virtual void SetReadyToDestroy();
};
