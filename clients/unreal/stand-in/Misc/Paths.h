// STAND-IN (see CoreMinimal.h). The project's folders are what the driver set
// (StandInControl.h), with a trailing '/', as the engine's are.
#pragma once
#include "CoreMinimal.h"
class FPaths {
 public:
  static FString ProjectDir();
  static FString ProjectSavedDir();
  static FString ProjectPluginsDir();
  // Relative to FPlatformProcess::BaseDir() (not the working folder), as in the
  // engine; '\' becomes '/', and "." and ".." are collapsed.
  static FString ConvertRelativePathToFull(const FString& Path);
  static bool IsRelative(const FString& Path);
  static bool FileExists(const FString& Path);
  // The parts joined with '/' (operator/ for each).
  template <typename... Parts>
  static FString Combine(Parts&&... parts) {
    FString Result;
    ((Result = Result.IsEmpty() ? FString(parts) : Result / FString(parts)), ...);
    return Result;
  }
};
