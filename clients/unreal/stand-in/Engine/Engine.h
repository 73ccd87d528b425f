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
};
class UEngine : public UObject {
 public:
  UWorld* GetWorldFromContextObject(const UObject* Object, EGetWorldErrorMode ErrorMode) const;
};
extern UEngine* GEngine;
