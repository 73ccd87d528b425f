// STAND-IN, not Unreal: the part of the Json module's FJsonObject the plugin
// uses (see CoreMinimal.h). Signatures follow UE 5.x.
#pragma once

#include "CoreMinimal.h"

class FJsonObject {
 public:
  bool TryGetNumberField(const FString& FieldName, int32& OutNumber) const;
  bool TryGetNumberField(const FString& FieldName, int64& OutNumber) const;
  bool TryGetNumberField(const FString& FieldName, double& OutNumber) const;
  bool TryGetBoolField(const FString& FieldName, bool& OutBool) const;
  bool TryGetStringField(const FString& FieldName, FString& OutString) const;
};
