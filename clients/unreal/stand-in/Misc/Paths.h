// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class FPaths {
 public:
  static FString ProjectDir();
  static FString ProjectSavedDir();
  static FString ProjectPluginsDir();
  static FString ConvertRelativePathToFull(const FString& Path);
  static bool IsRelative(const FString& Path);
  static bool FileExists(const FString& Path);
  template <typename... Parts>
  static FString Combine(Parts&&... parts);
};
