// STAND-IN, not Unreal: the Json module's serializer (see CoreMinimal.h).
#pragma once

#include "CoreMinimal.h"
#include "Dom/JsonObject.h"
#include "Serialization/JsonReader.h"

namespace StandIn {
// A JSON object: false (OutObject untouched) for anything else or bad JSON.
bool ParseJsonObject(const FString& Json, TSharedPtr<FJsonObject>& OutObject);
}  // namespace StandIn

class FJsonSerializer {
 public:
  template <typename CharType>
  static bool Deserialize(const TSharedRef<TJsonReader<CharType>>& Reader, TSharedPtr<FJsonObject>& OutObject) {
    return StandIn::ParseJsonObject(Reader->StandInSource(), OutObject);
  }
};
