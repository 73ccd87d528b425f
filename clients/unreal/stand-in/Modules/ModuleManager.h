// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class IModuleInterface {
 public:
  virtual ~IModuleInterface() = default;
  virtual void StartupModule() {}
  virtual void ShutdownModule() {}
};
#define IMPLEMENT_MODULE(ModuleClass, ModuleName) \
  extern "C" IModuleInterface* InitializeModule_##ModuleName() { return new ModuleClass(); }
