// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class IPlugin {
 public:
  virtual FString GetBaseDir() const = 0;
};
class IPluginManager {
 public:
  static IPluginManager& Get();
  virtual TSharedPtr<IPlugin> FindPlugin(const TCHAR* Name) = 0;
};
