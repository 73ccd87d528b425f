// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
#include "Engine/World.h"
namespace EWorldType { enum Type { None, Game, Editor, PIE, EditorPreview, GamePreview, Inactive }; }
enum class EGetWorldErrorMode { ReturnNull, LogAndReturnNull, Assert };
struct FWorldContext {
  EWorldType::Type WorldType = EWorldType::None;
  int32 PIEInstance = -1;
  bool RunAsDedicated = false;
  UWorld* World() const { return ThisCurrentWorld; }
  void SetCurrentWorld(UWorld* InWorld) { ThisCurrentWorld = InWorld; }

 private:
  UWorld* ThisCurrentWorld = nullptr;
};
class UEngine : public UObject {
 public:
  // Object->GetWorld(), as in the engine (null, and logged with LogAndReturnNull, when none).
  UWorld* GetWorldFromContextObject(const UObject* Object, EGetWorldErrorMode ErrorMode) const;
};
extern UEngine* GEngine;
