// STAND-IN (see CoreMinimal.h). The engine ticks every tickable object once a
// frame (a Conditional one while IsTickable()); the driver does that here.
#pragma once
#include "CoreMinimal.h"
enum class ETickableTickType : uint8 { Conditional, Always, Never };
class FTickableGameObject {
 public:
  virtual ~FTickableGameObject() = default;
  virtual void Tick(float DeltaTime) = 0;
  virtual TStatId GetStatId() const = 0;
  virtual ETickableTickType GetTickableTickType() const { return ETickableTickType::Conditional; }
  virtual bool IsTickable() const { return true; }
  virtual bool IsTickableWhenPaused() const { return false; }
};
