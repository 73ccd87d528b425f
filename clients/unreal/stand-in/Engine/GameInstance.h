// STAND-IN (see CoreMinimal.h). StandIn::NewGameInstance (StandInControl.h)
// makes one with its world and world context, as the engine does at start.
#pragma once
#include "CoreMinimal.h"
struct FWorldContext;
namespace StandIn { struct FGameInstanceAccess; }
class UGameInstance : public UObject {
 public:
  FWorldContext* GetWorldContext() const { return WorldContext; }
  virtual UWorld* GetWorld() const override;
  // The subsystem of class T the driver added (StandIn::AddSubsystem), or null.
  template <typename T>
  T* GetSubsystem() const {
    for (UObject* Subsystem : Subsystems) {
      if (T* Found = dynamic_cast<T*>(Subsystem)) return Found;
    }
    return nullptr;
  }
  // What keeps a Blueprint async action alive until it is ready to be destroyed.
  void RegisterReferencedObject(UObject* ObjectToReference);
  void UnregisterReferencedObject(UObject* ObjectToReference);

 protected:
  FWorldContext* WorldContext = nullptr;
  TArray<UObject*> ReferencedObjects;

 private:
  friend struct StandIn::FGameInstanceAccess;
  TArray<UObject*> Subsystems;  // what the engine's FSubsystemCollection holds
};
