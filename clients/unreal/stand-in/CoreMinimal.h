// STAND-IN, not Unreal: the few declarations of Unreal's Core the GameSidecar
// plugin uses, so scripts/test_unreal.sh can compile the plugin's C++ with g++
// on a machine without the engine. Signatures follow the engine's (UE 5.x);
// nothing here is meant to run, and nothing here proves the plugin builds
// with Unreal's toolchain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using int8 = std::int8_t;
using uint8 = std::uint8_t;
using int32 = std::int32_t;
using uint32 = std::uint32_t;
using int64 = std::int64_t;
using uint64 = std::uint64_t;
using TCHAR = char16_t;  // Unreal's TCHAR is UTF-16 on Windows and Linux
using ANSICHAR = char;
using UTF8CHAR = char;

#define TEXT(x) u##x
#ifndef PLATFORM_WINDOWS
#define PLATFORM_WINDOWS 0
#endif
#ifndef PLATFORM_MAC
#define PLATFORM_MAC 0
#endif
#ifndef PLATFORM_LINUX
#define PLATFORM_LINUX 1
#endif
#ifndef WITH_EDITOR
#define WITH_EDITOR 1
#endif
#define THIRD_PARTY_INCLUDES_START
#define THIRD_PARTY_INCLUDES_END

// Unreal Header Tool markers: empty for the compiler, as in the engine.
#define UCLASS(...)
#define USTRUCT(...)
#define UENUM(...)
#define UPROPERTY(...)
#define UFUNCTION(...)
#define UMETA(...)
// GENERATED_BODY() expands per line to what the stand-in *.generated.h defines
// (Super / ThisClass), the way UHT's generated headers do.
#define STANDIN_JOIN2(a, b) a##b
#define STANDIN_JOIN(a, b) STANDIN_JOIN2(a, b)
#define GENERATED_BODY() STANDIN_JOIN(STANDIN_GB_, __LINE__)

template <typename T>
constexpr std::remove_reference_t<T>&& MoveTemp(T&& v) { return static_cast<std::remove_reference_t<T>&&>(v); }

template <typename T>
class TArray {
 public:
  TArray() = default;
  TArray(std::initializer_list<T> items) : items_(items) {}
  int32 Add(const T& item) { items_.push_back(item); return static_cast<int32>(items_.size()) - 1; }
  int32 Num() const { return static_cast<int32>(items_.size()); }
  void Reset() { items_.clear(); }
  void Empty() { items_.clear(); }
  T& operator[](int32 i) { return items_[i]; }
  const T& operator[](int32 i) const { return items_[i]; }
  T* GetData() { return items_.data(); }
  typename std::vector<T>::iterator begin() { return items_.begin(); }
  typename std::vector<T>::iterator end() { return items_.end(); }
  typename std::vector<T>::const_iterator begin() const { return items_.begin(); }
  typename std::vector<T>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<T> items_;
};

class FString {
 public:
  FString() = default;
  FString(const TCHAR* s) : s_(s ? s : u"") {}
  FString(int32 count, const TCHAR* s) : s_(s, static_cast<size_t>(count)) {}
  const TCHAR* operator*() const { return s_.c_str(); }
  bool IsEmpty() const { return s_.empty(); }
  bool Contains(const TCHAR* sub) const { return s_.find(sub) != std::u16string::npos; }
  int32 Len() const { return static_cast<int32>(s_.size()); }
  void Reset() { s_.clear(); }
  FString TrimStartAndEnd() const;
  FString ToUpper() const;
  FString& operator+=(const FString& o) { s_ += o.s_; return *this; }
  FString& operator+=(const TCHAR* o) { s_ += o; return *this; }
  FString& operator+=(TCHAR c) { s_ += c; return *this; }
  friend FString operator+(const FString& a, const FString& b) { FString r = a; r += b; return r; }
  friend FString operator+(const TCHAR* a, const FString& b) { FString r(a); r += b; return r; }
  friend FString operator/(const FString& a, const FString& b);  // path join
  friend FString operator/(const FString& a, const TCHAR* b);
  bool operator==(const FString& o) const { return s_ == o.s_; }
  template <typename... Args>
  static FString Printf(const TCHAR* format, Args... args);
  const TCHAR* begin() const { return s_.data(); }
  const TCHAR* end() const { return s_.data() + s_.size(); }

 private:
  std::u16string s_;
};

class FName {
 public:
  FName() = default;
  FName(const TCHAR* name) : name_(name ? name : u"") {}
  bool operator==(const FName& other) const { return name_ == other.name_; }

 private:
  std::u16string name_;
};

template <typename K, typename V>
struct TPair {
  K Key;
  V Value;
};

template <typename K, typename V>
class TMap {
 public:
  V& Add(const K& key, V value);
  V* Find(const K& key);
  const V* Find(const K& key) const;
  int32 Remove(const K& key);
  void Empty();
  const TPair<K, V>* begin() const;
  const TPair<K, V>* end() const;
};

template <typename Signature>
using TFunction = std::function<Signature>;

template <typename T>
class TSharedPtr {
 public:
  bool IsValid() const { return p_ != nullptr; }
  T* operator->() const { return p_.get(); }

 private:
  std::shared_ptr<T> p_;
};

template <typename T>
class TSharedRef {
 public:
  T* operator->() const { return p_.get(); }

 private:
  TSharedRef();
  std::shared_ptr<T> p_;
};

class UObject {
 public:
  virtual ~UObject() = default;
};

template <typename T>
class TWeakObjectPtr {
 public:
  TWeakObjectPtr() = default;
  TWeakObjectPtr(T* p) : p_(p) {}
  T* Get() const { return p_; }

 private:
  T* p_ = nullptr;
};

template <typename To, typename From>
To* Cast(From* Object) { return dynamic_cast<To*>(Object); }
template <typename To, typename From>
const To* Cast(const From* Object) { return dynamic_cast<const To*>(Object); }

// CoreGlobals.h
bool IsRunningDedicatedServer();

template <typename T>
T* NewObject();
template <typename T>
const T* GetDefault();

struct FMath {
  template <typename T>
  static T Max(T a, T b) { return a < b ? b : a; }
};

class FTCHARToUTF8 {
 public:
  explicit FTCHARToUTF8(const TCHAR* s);
  const ANSICHAR* Get() const;
  int32 Length() const;
};
class FUTF8ToTCHAR {
 public:
  explicit FUTF8ToTCHAR(const ANSICHAR* s);
  const TCHAR* Get() const;
  int32 Length() const;
};

struct TStatId {};
#define RETURN_QUICK_DECLARE_CYCLE_STAT(Name, Group) return TStatId()

struct FLogCategoryStandIn {};
extern FLogCategoryStandIn LogTemp;
#define DEFINE_LOG_CATEGORY_STATIC(Name, Default, Compiled) static FLogCategoryStandIn Name;
#define DECLARE_LOG_CATEGORY_EXTERN(Name, Default, Compiled) extern FLogCategoryStandIn Name
#define DEFINE_LOG_CATEGORY(Name) FLogCategoryStandIn Name
namespace StandIn {
template <typename... Args>
void Log(const FLogCategoryStandIn&, const TCHAR* format, Args&&...) { (void)format; }
}  // namespace StandIn
#define UE_LOG(Category, Verbosity, Format, ...) StandIn::Log(Category, Format, ##__VA_ARGS__)

// Delegates: what the plugin calls on them.
#define DECLARE_DYNAMIC_DELEGATE_TwoParams(Name, T1, N1, T2, N2) \
  struct Name {                                                   \
    bool ExecuteIfBound(T1 N1, T2 N2) const;                      \
  };
#define DECLARE_DYNAMIC_MULTICAST_DELEGATE_OneParam(Name, T1, N1) \
  struct Name {                                                    \
    void Broadcast(T1 N1) const;                                   \
  };
#define DECLARE_DYNAMIC_MULTICAST_DELEGATE_TwoParams(Name, T1, N1, T2, N2) \
  struct Name {                                                             \
    void Broadcast(T1 N1, T2 N2) const;                                     \
  };

struct FPlatformProcess {
  static void* GetDllHandle(const TCHAR* path);
  static void FreeDllHandle(void* handle);
  static const TCHAR* BaseDir();
};
