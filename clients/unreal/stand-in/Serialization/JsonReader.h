// STAND-IN, not Unreal: the Json module's reader factory (see CoreMinimal.h).
#pragma once

#include "CoreMinimal.h"

template <typename CharType = TCHAR>
class TJsonReader {
 public:
  explicit TJsonReader(const FString& InSource) : Source(InSource) {}
  const FString& StandInSource() const { return Source; }

 private:
  FString Source;
};

template <typename CharType = TCHAR>
class TJsonReaderFactory {
 public:
  static TSharedRef<TJsonReader<CharType>> Create(const FString& JsonString) {
    return MakeShared<TJsonReader<CharType>>(JsonString);
  }
};
