// STAND-IN, not Unreal: the Json module's FJsonObject (see CoreMinimal.h and
// Dom/JsonValue.h). Signatures follow UE 5.x; a field name matches ignoring
// case, as Unreal's TMap<FString, ...> does.
#pragma once

#include "CoreMinimal.h"
#include "Dom/JsonValue.h"

class FJsonObject {
 public:
  TMap<FString, TSharedPtr<FJsonValue>> Values;

  TSharedPtr<FJsonValue> TryGetField(const FString& FieldName) const;
  bool HasField(const FString& FieldName) const { return Values.Contains(FieldName); }
  void SetField(const FString& FieldName, const TSharedPtr<FJsonValue>& Value) { Values.Add(FieldName, Value); }
  bool TryGetNumberField(const FString& FieldName, int32& OutNumber) const;
  bool TryGetNumberField(const FString& FieldName, int64& OutNumber) const;
  bool TryGetNumberField(const FString& FieldName, double& OutNumber) const;
  bool TryGetBoolField(const FString& FieldName, bool& OutBool) const;
  bool TryGetStringField(const FString& FieldName, FString& OutString) const;
  bool TryGetArrayField(const FString& FieldName, const TArray<TSharedPtr<FJsonValue>>*& OutArray) const;
  bool TryGetObjectField(const FString& FieldName, const TSharedPtr<FJsonObject>*& OutObject) const;
};
