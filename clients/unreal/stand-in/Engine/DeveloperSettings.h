// STAND-IN (see CoreMinimal.h).
#pragma once
#include "CoreMinimal.h"
class UDeveloperSettings : public UObject {};
