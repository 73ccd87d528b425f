// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class IFileManager {
 public:
  virtual ~IFileManager() = default;
  static IFileManager& Get();
  // Tree: with the missing parents. True when the folder exists afterwards.
  virtual bool MakeDirectory(const TCHAR* Path, bool Tree = false) = 0;
};
