// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class IFileManager {
 public:
  static IFileManager& Get();
  virtual bool MakeDirectory(const TCHAR* Path, bool Tree = false) = 0;
};
