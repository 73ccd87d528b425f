// STAND-IN (see CoreMinimal.h): standard Base64 with padding, as Unreal's default mode.
#pragma once
#include "CoreMinimal.h"
class FBase64 {
 public:
  static FString Encode(const TArray<uint8>& Source);
  // False (OutDest emptied) for text that is not Base64.
  static bool Decode(const FString& Source, TArray<uint8>& OutDest);
};
