// STAND-IN, not Unreal: the Json module's reader factory (see CoreMinimal.h).
#pragma once

#include "CoreMinimal.h"

template <typename CharType = TCHAR>
class TJsonReader {};

template <typename CharType = TCHAR>
class TJsonReaderFactory {
 public:
  static TSharedRef<TJsonReader<CharType>> Create(const FString& JsonString);
};
