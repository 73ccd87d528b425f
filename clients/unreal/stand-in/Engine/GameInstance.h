// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
struct FWorldContext;
class UGameInstance : public UObject {
 public:
  FWorldContext* GetWorldContext() const;
  template <typename T>
  T* GetSubsystem() const;
};
