// STAND-IN (see CoreMinimal.h): the dynamic delegates the DECLARE_* macros declare.
#pragma once
#include "CoreMinimal.h"

// Delegates. Unreal binds a dynamic delegate to UFUNCTIONs only; here the
// driver binds lambdas with the stand-in extras StandInBindLambda (single-cast)
// and StandInAddLambda (multicast), which Unreal does not have.
namespace StandIn {
template <typename Signature>
class TDynamicDelegate;
template <typename... Params>
class TDynamicDelegate<void(Params...)> {
 public:
  bool IsBound() const { return static_cast<bool>(Function); }
  bool ExecuteIfBound(Params... Args) const {
    if (!Function) return false;
    Function(Args...);
    return true;
  }
  void Unbind() { Function = nullptr; }
  void StandInBindLambda(std::function<void(Params...)> F) { Function = MoveTemp(F); }

 private:
  std::function<void(Params...)> Function;
};
template <typename Signature>
class TDynamicMulticastDelegate;
template <typename... Params>
class TDynamicMulticastDelegate<void(Params...)> {
 public:
  bool IsBound() const { return !Listeners.empty(); }
  // A copy of the list: a listener may add another while it runs.
  void Broadcast(Params... Args) const {
    const std::vector<std::function<void(Params...)>> Now = Listeners;
    for (const std::function<void(Params...)>& L : Now) L(Args...);
  }
  void Clear() { Listeners.clear(); }
  void StandInAddLambda(std::function<void(Params...)> F) { Listeners.push_back(MoveTemp(F)); }

 private:
  std::vector<std::function<void(Params...)>> Listeners;
};
}  // namespace StandIn
#define DECLARE_DYNAMIC_DELEGATE(Name) struct Name : StandIn::TDynamicDelegate<void()> {};
#define DECLARE_DYNAMIC_DELEGATE_OneParam(Name, T1, N1) struct Name : StandIn::TDynamicDelegate<void(T1)> {};
#define DECLARE_DYNAMIC_DELEGATE_TwoParams(Name, T1, N1, T2, N2) \
  struct Name : StandIn::TDynamicDelegate<void(T1, T2)> {};
#define DECLARE_DYNAMIC_DELEGATE_ThreeParams(Name, T1, N1, T2, N2, T3, N3) \
  struct Name : StandIn::TDynamicDelegate<void(T1, T2, T3)> {};
#define DECLARE_DYNAMIC_MULTICAST_DELEGATE(Name) struct Name : StandIn::TDynamicMulticastDelegate<void()> {};
#define DECLARE_DYNAMIC_MULTICAST_DELEGATE_OneParam(Name, T1, N1) \
  struct Name : StandIn::TDynamicMulticastDelegate<void(T1)> {};
#define DECLARE_DYNAMIC_MULTICAST_DELEGATE_TwoParams(Name, T1, N1, T2, N2) \
  struct Name : StandIn::TDynamicMulticastDelegate<void(T1, T2)> {};
#define DECLARE_DYNAMIC_MULTICAST_DELEGATE_ThreeParams(Name, T1, N1, T2, N2, T3, N3) \
  struct Name : StandIn::TDynamicMulticastDelegate<void(T1, T2, T3)> {};
