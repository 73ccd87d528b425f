// STAND-IN (see CoreMinimal.h): the Json module's reader, FJsonValue and FJsonObject.
#include "StandInInternal.h"

using namespace StandInText;

// ---- JSON ----

namespace {
FLogCategoryStandIn LogJson{"LogJson"};

class FJsonParser {
 public:
  explicit FJsonParser(const FString& Text) : P(*Text), End(*Text + Text.Len()) {}

  bool Object(TSharedPtr<FJsonObject>& Out, int Depth) {
    if (Depth > 64 || !Take(u'{')) return false;
    Out = TSharedPtr<FJsonObject>(new FJsonObject());
    if (Take(u'}')) return true;
    do {
      FString Key;
      TSharedPtr<FJsonValue> Value;
      if (!String(Key) || !Take(u':') || !Value_(Value, Depth)) return false;
      Out->Values.Add(Key, Value);
    } while (Take(u','));
    return Take(u'}');
  }

  bool AtEnd() {
    Space();
    return P == End;
  }

 private:
  void Space() { while (P < End && IsSpace(*P)) ++P; }
  bool Take(TCHAR C) {
    Space();
    if (P < End && *P == C) {
      ++P;
      return true;
    }
    return false;
  }
  bool Word(const char* W) {
    const size_t N = std::strlen(W);
    if (static_cast<size_t>(End - P) < N) return false;
    for (size_t i = 0; i < N; ++i) if (P[i] != static_cast<TCHAR>(W[i])) return false;
    P += N;
    return true;
  }
  static int Hex(TCHAR C) {
    if (C >= u'0' && C <= u'9') return C - u'0';
    if (C >= u'a' && C <= u'f') return C - u'a' + 10;
    if (C >= u'A' && C <= u'F') return C - u'A' + 10;
    return -1;
  }
  bool String(FString& Out) {
    if (!Take(u'"')) return false;
    while (P < End && *P != u'"') {
      TCHAR C = *P++;
      if (C < 0x20) return false;
      if (C == u'\\') {
        if (P == End) return false;
        switch (*P++) {
          case u'"': C = u'"'; break;
          case u'\\': C = u'\\'; break;
          case u'/': C = u'/'; break;
          case u'b': C = u'\b'; break;
          case u'f': C = u'\f'; break;
          case u'n': C = u'\n'; break;
          case u'r': C = u'\r'; break;
          case u't': C = u'\t'; break;
          case u'u': {
            // One UTF-16 unit: a pair (\ud83d\ude00) arrives as its two units.
            int Code = 0;
            for (int i = 0; i < 4; ++i) {
              const int H = P < End ? Hex(*P++) : -1;
              if (H < 0) return false;
              Code = Code * 16 + H;
            }
            C = static_cast<TCHAR>(Code);
            break;
          }
          default: return false;
        }
      }
      Out += C;
    }
    return Take(u'"');
  }
  bool Number(double& Out) {
    std::string Ascii;
    auto Digits = [this, &Ascii]() {
      const size_t Before = Ascii.size();
      while (P < End && *P >= u'0' && *P <= u'9') Ascii += static_cast<char>(*P++);
      return Ascii.size() > Before;
    };
    if (P < End && *P == u'-') Ascii += static_cast<char>(*P++);
    if (!Digits()) return false;
    if (P < End && *P == u'.') {
      Ascii += static_cast<char>(*P++);
      if (!Digits()) return false;
    }
    if (P < End && (*P == u'e' || *P == u'E')) {
      Ascii += static_cast<char>(*P++);
      if (P < End && (*P == u'+' || *P == u'-')) Ascii += static_cast<char>(*P++);
      if (!Digits()) return false;
    }
    Out = std::strtod(Ascii.c_str(), nullptr);
    return true;
  }
  bool Value_(TSharedPtr<FJsonValue>& Out, int Depth) {
    Space();
    if (P == End) return false;
    if (*P == u'"') {
      FString Text;
      if (!String(Text)) return false;
      Out = TSharedPtr<FJsonValue>(new FJsonValueString(Text));
      return true;
    }
    if (*P == u'{') {
      TSharedPtr<FJsonObject> Nested;
      if (!Object(Nested, Depth + 1)) return false;
      Out = TSharedPtr<FJsonValue>(new FJsonValueObject(Nested));
      return true;
    }
    if (*P == u'[') {
      ++P;
      TArray<TSharedPtr<FJsonValue>> Items;
      if (!Take(u']')) {
        do {
          TSharedPtr<FJsonValue> Item;
          if (Depth > 64 || !Value_(Item, Depth + 1)) return false;
          Items.Add(Item);
        } while (Take(u','));
        if (!Take(u']')) return false;
      }
      Out = TSharedPtr<FJsonValue>(new FJsonValueArray(Items));
      return true;
    }
    if (Word("true") || Word("false")) {
      Out = TSharedPtr<FJsonValue>(new FJsonValueBoolean(P[-1] == u'e' && P[-2] == u'u'));
      return true;
    }
    if (Word("null")) {
      Out = TSharedPtr<FJsonValue>(new FJsonValueNull());
      return true;
    }
    double Number_ = 0;
    if (!Number(Number_)) return false;
    Out = TSharedPtr<FJsonValue>(new FJsonValueNumber(Number_));
    return true;
  }

  const TCHAR* P;
  const TCHAR* End;
};

// FString::IsNumeric: an optional sign, digits, at most one '.'.
bool IsNumeric(const FString& Text) {
  const TCHAR* P = *Text;
  if (*P == u'-' || *P == u'+') ++P;
  bool Digit = false, Dot = false;
  for (; *P != 0; ++P) {
    if (*P >= u'0' && *P <= u'9') Digit = true;
    else if (*P == u'.' && !Dot) Dot = true;
    else return false;
  }
  return Digit;
}

// Rounded half away from zero; false when out of Int's range.
template <typename Int>
bool ToInteger(double D, Int& Out) {
  D = std::round(D);
  if (D < static_cast<double>(std::numeric_limits<Int>::min()) || D >= -static_cast<double>(std::numeric_limits<Int>::min())) {
    return false;
  }
  Out = static_cast<Int>(D);
  return true;
}

const char* TypeName(EJson Type) {
  switch (Type) {
    case EJson::Null: return "Null";
    case EJson::String: return "String";
    case EJson::Number: return "Number";
    case EJson::Boolean: return "Boolean";
    case EJson::Array: return "Array";
    case EJson::Object: return "Object";
    default: return "None";
  }
}
}  // namespace

bool StandIn::ParseJsonObject(const FString& Json, TSharedPtr<FJsonObject>& OutObject) {
  TSharedPtr<FJsonObject> Object;
  FJsonParser Parser(Json);
  if (!Parser.Object(Object, 0) || !Parser.AtEnd()) return false;
  OutObject = Object;
  return true;
}

bool FJsonValue::TryGetNumber(int32& OutNumber) const {
  double D;
  return TryGetNumber(D) && ToInteger(D, OutNumber);
}

bool FJsonValue::TryGetNumber(int64& OutNumber) const {
  double D;
  return TryGetNumber(D) && ToInteger(D, OutNumber);
}

void FJsonValue::ErrorMessage(const TCHAR* InType) const {
  UE_LOG(LogJson, Error, TEXT("Json Value of type '%s' used as a '%s'."), *FromUtf8(TypeName(Type)), InType);
}

double FJsonValue::AsNumber() const {
  double Number = 0;
  if (!TryGetNumber(Number)) ErrorMessage(TEXT("Number"));
  return Number;
}

FString FJsonValue::AsString() const {
  FString String;
  if (!TryGetString(String)) ErrorMessage(TEXT("String"));
  return String;
}

bool FJsonValue::AsBool() const {
  bool Bool = false;
  if (!TryGetBool(Bool)) ErrorMessage(TEXT("Boolean"));
  return Bool;
}

const TArray<TSharedPtr<FJsonValue>>& FJsonValue::AsArray() const {
  static const TArray<TSharedPtr<FJsonValue>> Empty;
  const TArray<TSharedPtr<FJsonValue>>* Array = &Empty;
  if (!TryGetArray(Array)) ErrorMessage(TEXT("Array"));
  return *Array;
}

// As in the engine, the wrong type answers an empty object (valid), not null.
const TSharedPtr<FJsonObject>& FJsonValue::AsObject() const {
  static const TSharedPtr<FJsonObject> Empty(new FJsonObject());
  const TSharedPtr<FJsonObject>* Object = &Empty;
  if (!TryGetObject(Object)) ErrorMessage(TEXT("Object"));
  return *Object;
}

bool FJsonValueString::TryGetNumber(double& OutNumber) const {
  if (!IsNumeric(Value)) return false;
  OutNumber = std::strtod(Utf8(Value).c_str(), nullptr);
  return true;
}

// proto3 JSON's int64 is a string: read it exactly, not through a double.
bool FJsonValueString::TryGetNumber(int64& OutNumber) const {
  const std::string Text = Utf8(Value);
  char* EndPtr = nullptr;
  errno = 0;
  const long long Parsed = std::strtoll(Text.c_str(), &EndPtr, 10);
  if (!Text.empty() && EndPtr != nullptr && *EndPtr == '\0' && errno == 0) {
    OutNumber = Parsed;
    return true;
  }
  return FJsonValue::TryGetNumber(OutNumber);
}

bool FJsonValueString::TryGetBool(bool& OutBool) const {
  if (Value == TEXT("true") || Value == TEXT("false")) {
    OutBool = Value == TEXT("true");
    return true;
  }
  return false;
}

bool FJsonValueNumber::TryGetString(FString& OutString) const {
  char Buffer[64];
  if (Value == std::floor(Value) && std::fabs(Value) < 1e15) {
    std::snprintf(Buffer, sizeof Buffer, "%lld", static_cast<long long>(Value));
  } else {
    std::snprintf(Buffer, sizeof Buffer, "%.17g", Value);
  }
  OutString = FromUtf8(Buffer);
  return true;
}

TSharedPtr<FJsonValue> FJsonObject::TryGetField(const FString& FieldName) const {
  const TSharedPtr<FJsonValue>* Found = Values.Find(FieldName);
  return Found != nullptr ? *Found : TSharedPtr<FJsonValue>();
}

bool FJsonObject::TryGetNumberField(const FString& FieldName, int32& OutNumber) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetNumber(OutNumber);
}
bool FJsonObject::TryGetNumberField(const FString& FieldName, int64& OutNumber) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetNumber(OutNumber);
}
bool FJsonObject::TryGetNumberField(const FString& FieldName, double& OutNumber) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetNumber(OutNumber);
}
bool FJsonObject::TryGetBoolField(const FString& FieldName, bool& OutBool) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetBool(OutBool);
}
bool FJsonObject::TryGetStringField(const FString& FieldName, FString& OutString) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetString(OutString);
}
bool FJsonObject::TryGetArrayField(const FString& FieldName, const TArray<TSharedPtr<FJsonValue>>*& OutArray) const {
  const TSharedPtr<FJsonValue>* Field = Values.Find(FieldName);
  return Field != nullptr && Field->IsValid() && (*Field)->TryGetArray(OutArray);
}
bool FJsonObject::TryGetObjectField(const FString& FieldName, const TSharedPtr<FJsonObject>*& OutObject) const {
  const TSharedPtr<FJsonValue>* Field = Values.Find(FieldName);
  return Field != nullptr && Field->IsValid() && (*Field)->TryGetObject(OutObject);
}
