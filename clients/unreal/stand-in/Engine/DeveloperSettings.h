// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class UDeveloperSettings : public UObject {
 public:
  // Where the settings page sits in Project Settings: the engine's default category is
  // the project's ("Game"); a plugin's settings belong under "Plugins".
  virtual FName GetContainerName() const { return TEXT("Project"); }
  virtual FName GetCategoryName() const { return TEXT("Game"); }
};
