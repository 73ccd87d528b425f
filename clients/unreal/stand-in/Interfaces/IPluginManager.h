// STAND-IN (see CoreMinimal.h). FindPlugin finds <ProjectPluginsDir>/<Name>
// when that folder exists, and nothing otherwise.
#pragma once
#include "CoreMinimal.h"
class IPlugin {
 public:
  virtual ~IPlugin() = default;
  virtual FString GetBaseDir() const = 0;
};
class IPluginManager {
 public:
  virtual ~IPluginManager() = default;
  static IPluginManager& Get();
  virtual TSharedPtr<IPlugin> FindPlugin(const TCHAR* Name) = 0;
};
