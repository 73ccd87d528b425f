// STAND-IN, not Unreal: the Json module's serializer (see CoreMinimal.h).
#pragma once

#include "CoreMinimal.h"
#include "Dom/JsonObject.h"
#include "Serialization/JsonReader.h"

class FJsonSerializer {
 public:
  template <typename CharType>
  static bool Deserialize(const TSharedRef<TJsonReader<CharType>>& Reader, TSharedPtr<FJsonObject>& OutObject);
};
