// STAND-IN, not Unreal: the Json module's FJsonValue family (see CoreMinimal.h),
// with UE 5.x's conversions: a number's string is its text, a numeric string is a
// number, a bool is 0/1, null is nothing; As*() of the wrong type logs an error
// (LogJson) and answers the empty value, as the engine's does.
#pragma once

#include "CoreMinimal.h"

class FJsonObject;

enum class EJson { None, Null, String, Number, Boolean, Array, Object };

class FJsonValue {
 public:
  virtual ~FJsonValue() = default;
  EJson Type = EJson::None;

  virtual bool TryGetNumber(double& OutNumber) const { return false; }
  // Rounded half away from zero; false when out of range.
  bool TryGetNumber(int32& OutNumber) const;
  virtual bool TryGetNumber(int64& OutNumber) const;
  virtual bool TryGetString(FString& OutString) const { return false; }
  virtual bool TryGetBool(bool& OutBool) const { return false; }
  virtual bool TryGetArray(const TArray<TSharedPtr<FJsonValue>>*& OutArray) const { return false; }
  virtual bool TryGetObject(const TSharedPtr<FJsonObject>*& OutObject) const { return false; }
  bool IsNull() const { return Type == EJson::Null || Type == EJson::None; }

  double AsNumber() const;
  FString AsString() const;
  bool AsBool() const;
  const TArray<TSharedPtr<FJsonValue>>& AsArray() const;
  const TSharedPtr<FJsonObject>& AsObject() const;

 protected:
  void ErrorMessage(const TCHAR* InType) const;
};

class FJsonValueString : public FJsonValue {
 public:
  using FJsonValue::TryGetNumber;
  explicit FJsonValueString(const FString& InValue) : Value(InValue) { Type = EJson::String; }
  bool TryGetString(FString& OutString) const override { OutString = Value; return true; }
  bool TryGetNumber(double& OutNumber) const override;
  bool TryGetNumber(int64& OutNumber) const override;
  bool TryGetBool(bool& OutBool) const override;

 private:
  FString Value;
};

class FJsonValueNumber : public FJsonValue {
 public:
  using FJsonValue::TryGetNumber;
  explicit FJsonValueNumber(double InValue) : Value(InValue) { Type = EJson::Number; }
  bool TryGetNumber(double& OutNumber) const override { OutNumber = Value; return true; }
  bool TryGetString(FString& OutString) const override;
  bool TryGetBool(bool& OutBool) const override { OutBool = Value != 0.0; return true; }

 private:
  double Value;
};

class FJsonValueBoolean : public FJsonValue {
 public:
  using FJsonValue::TryGetNumber;
  explicit FJsonValueBoolean(bool InValue) : Value(InValue) { Type = EJson::Boolean; }
  bool TryGetNumber(double& OutNumber) const override { OutNumber = Value ? 1 : 0; return true; }
  bool TryGetString(FString& OutString) const override { OutString = Value ? TEXT("true") : TEXT("false"); return true; }
  bool TryGetBool(bool& OutBool) const override { OutBool = Value; return true; }

 private:
  bool Value;
};

class FJsonValueNull : public FJsonValue {
 public:
  FJsonValueNull() { Type = EJson::Null; }
};

class FJsonValueArray : public FJsonValue {
 public:
  explicit FJsonValueArray(const TArray<TSharedPtr<FJsonValue>>& InValue) : Value(InValue) { Type = EJson::Array; }
  bool TryGetArray(const TArray<TSharedPtr<FJsonValue>>*& OutArray) const override { OutArray = &Value; return true; }

 private:
  TArray<TSharedPtr<FJsonValue>> Value;
};

class FJsonValueObject : public FJsonValue {
 public:
  explicit FJsonValueObject(const TSharedPtr<FJsonObject>& InValue) : Value(InValue) { Type = EJson::Object; }
  bool TryGetObject(const TSharedPtr<FJsonObject>*& OutObject) const override { OutObject = &Value; return true; }

 private:
  TSharedPtr<FJsonObject> Value;
};
