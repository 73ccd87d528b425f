// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class UGameInstance;
class UBlueprintAsyncActionBase : public UObject {
 public:
  // Does nothing: each node starts its work here.
  virtual void Activate();
  // The context's game instance keeps the action (RegisterReferencedObject)
  // until SetReadyToDestroy.
  virtual void RegisterWithGameInstance(const UObject* WorldContextObject);
  virtual void RegisterWithGameInstance(UGameInstance* GameInstance);
  virtual void SetReadyToDestroy();

 protected:
  TWeakObjectPtr<UGameInstance> RegisteredWithGameInstance;
};
