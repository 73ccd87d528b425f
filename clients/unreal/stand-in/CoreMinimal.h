// STAND-IN, not Unreal: a small working imitation of the parts of Unreal's Core
// the GameSidecar plugin uses. scripts/test_unreal.sh compiles the plugin's C++
// against these headers with g++ (syntax only, Linux and Win64 branches), and
// also links and RUNS it against them and the real sidecar
// (clients/unreal/checks/run/plugin_run_test.cpp); the out-of-line parts are in
// StandIn{Text,Engine,Json}.cpp, the driver's knobs in StandInControl.h.
// Signatures follow the engine's (UE 5.x), and so do the behaviours the plugin
// relies on (FString's == and Contains ignore case, as Unreal's do). Names with
// "StandIn" in them are extras of this imitation, absent from Unreal. None of it
// proves the plugin builds with Unreal's toolchain or behaves the same inside
// the engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
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

namespace ESearchCase { enum Type { CaseSensitive, IgnoreCase }; }

template <typename T>
class TArray {
 public:
  TArray() = default;
  TArray(std::initializer_list<T> items) : items_(items) {}
  int32 Add(const T& item) { items_.push_back(item); return static_cast<int32>(items_.size()) - 1; }
  int32 Add(T&& item) { items_.push_back(MoveTemp(item)); return static_cast<int32>(items_.size()) - 1; }
  int32 Num() const { return static_cast<int32>(items_.size()); }
  bool IsEmpty() const { return items_.empty(); }
  bool Contains(const T& item) const {
    for (const T& i : items_) if (i == item) return true;
    return false;
  }
  // Removes every element equal to item; returns how many.
  int32 Remove(const T& item) {
    const size_t before = items_.size();
    for (size_t i = items_.size(); i-- > 0;) if (items_[i] == item) items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
    return static_cast<int32>(before - items_.size());
  }
  void Reset() { items_.clear(); }
  void Empty() { items_.clear(); }
  T& operator[](int32 i) { return items_[static_cast<size_t>(i)]; }
  const T& operator[](int32 i) const { return items_[static_cast<size_t>(i)]; }
  T* GetData() { return items_.data(); }
  bool operator==(const TArray& o) const { return items_ == o.items_; }
  bool operator!=(const TArray& o) const { return !(*this == o); }
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
  TCHAR& operator[](int32 i) { return s_[static_cast<size_t>(i)]; }
  const TCHAR& operator[](int32 i) const { return s_[static_cast<size_t>(i)]; }
  bool IsEmpty() const { return s_.empty(); }
  int32 Len() const { return static_cast<int32>(s_.size()); }
  void Reset() { s_.clear(); }
  // As in Unreal: Equals is case-sensitive unless told; Contains, StartsWith and
  // EndsWith ignore case (ASCII letters) unless told.
  bool Equals(const FString& o, ESearchCase::Type c = ESearchCase::CaseSensitive) const;
  bool Contains(const TCHAR* sub, ESearchCase::Type c = ESearchCase::IgnoreCase) const;
  bool Contains(const FString& sub, ESearchCase::Type c = ESearchCase::IgnoreCase) const { return Contains(*sub, c); }
  bool StartsWith(const FString& prefix, ESearchCase::Type c = ESearchCase::IgnoreCase) const;
  bool EndsWith(const FString& suffix, ESearchCase::Type c = ESearchCase::IgnoreCase) const;
  FString TrimStartAndEnd() const;
  FString ToUpper() const;
  FString& operator+=(const FString& o) { s_ += o.s_; return *this; }
  FString& operator+=(const TCHAR* o) { s_ += o; return *this; }
  FString& operator+=(TCHAR c) { s_ += c; return *this; }
  friend FString operator+(const FString& a, const FString& b) { FString r = a; r += b; return r; }
  friend FString operator+(const TCHAR* a, const FString& b) { FString r(a); r += b; return r; }
  friend FString operator/(const FString& a, const FString& b);  // path join
  friend FString operator/(const FString& a, const TCHAR* b);
  // As in Unreal: == and < ignore case.
  bool operator==(const FString& o) const { return Equals(o, ESearchCase::IgnoreCase); }
  bool operator!=(const FString& o) const { return !(*this == o); }
  bool operator<(const FString& o) const;
  // The format is checked at run time: a specifier without a matching argument
  // (%s needs a TCHAR*: *SomeFString) ends the process with a message.
  template <typename... Args>
  static FString Printf(const TCHAR* format, Args... args);
  const TCHAR* begin() const { return s_.data(); }
  const TCHAR* end() const { return s_.data() + s_.size(); }

 private:
  std::u16string s_;
};

namespace StandIn {
// One FString::Printf argument, as a specifier may read it.
struct FFormatArg {
  enum class EKind { None, Signed, Unsigned, Double, Text, Pointer } Kind = EKind::None;
  long long Signed = 0;
  unsigned long long Unsigned = 0;
  double Double = 0;
  const TCHAR* Text = nullptr;
  const void* Pointer = nullptr;
  size_t Size = 0;  // sizeof the argument as passed
};
template <typename T>
FFormatArg ToFormatArg(T Value) {
  FFormatArg Arg;
  Arg.Size = sizeof(T);
  if constexpr (std::is_enum_v<T>) {
    return ToFormatArg(static_cast<std::underlying_type_t<T>>(Value));
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    Arg.Kind = FFormatArg::EKind::Signed;
    Arg.Signed = Value;
  } else if constexpr (std::is_integral_v<T>) {
    Arg.Kind = FFormatArg::EKind::Unsigned;
    Arg.Unsigned = Value;
  } else if constexpr (std::is_floating_point_v<T>) {
    Arg.Kind = FFormatArg::EKind::Double;
    Arg.Double = Value;
  } else if constexpr (std::is_same_v<std::decay_t<T>, const TCHAR*> || std::is_same_v<std::decay_t<T>, TCHAR*>) {
    Arg.Kind = FFormatArg::EKind::Text;
    Arg.Text = Value;
  } else {
    static_assert(std::is_pointer_v<T>, "FString::Printf takes numbers and pointers (an FString goes in as *String)");
    Arg.Kind = FFormatArg::EKind::Pointer;
    Arg.Pointer = Value;
  }
  return Arg;
}
FString FormatString(const TCHAR* Format, const FFormatArg* Args, size_t Count);
}  // namespace StandIn

template <typename... Args>
FString FString::Printf(const TCHAR* format, Args... args) {
  const StandIn::FFormatArg List[] = {StandIn::ToFormatArg(args)..., StandIn::FFormatArg()};
  return StandIn::FormatString(format, List, sizeof...(Args));
}

class FName {
 public:
  FName() = default;
  FName(const TCHAR* name) : name_(name ? name : u"") {}
  bool operator==(const FName& other) const { return name_ == other.name_; }  // Unreal's ignores case too
  FString ToString() const { return name_; }

 private:
  FString name_;
};

template <typename K, typename V>
struct TPair {
  K Key;
  V Value;
};

// Insertion-ordered pairs; keys compare with == (an FString key ignores case, as
// Unreal's TMap<FString, ...> does). Like Unreal's, Add may move every value:
// a pointer from Find does not survive an Add.
template <typename K, typename V>
class TMap {
 public:
  V& Add(const K& key, V value) {
    if (V* found = Find(key)) {
      *found = MoveTemp(value);
      return *found;
    }
    pairs_.push_back(TPair<K, V>{key, MoveTemp(value)});
    return pairs_.back().Value;
  }
  V* Find(const K& key) {
    for (TPair<K, V>& p : pairs_) if (p.Key == key) return &p.Value;
    return nullptr;
  }
  const V* Find(const K& key) const {
    for (const TPair<K, V>& p : pairs_) if (p.Key == key) return &p.Value;
    return nullptr;
  }
  bool Contains(const K& key) const { return Find(key) != nullptr; }
  int32 Remove(const K& key) {
    for (size_t i = 0; i < pairs_.size(); ++i) {
      if (pairs_[i].Key == key) {
        pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(i));
        return 1;
      }
    }
    return 0;
  }
  void Empty() { pairs_.clear(); }
  int32 Num() const { return static_cast<int32>(pairs_.size()); }
  TPair<K, V>* begin() { return pairs_.data(); }
  TPair<K, V>* end() { return pairs_.data() + pairs_.size(); }
  const TPair<K, V>* begin() const { return pairs_.data(); }
  const TPair<K, V>* end() const { return pairs_.data() + pairs_.size(); }

 private:
  std::vector<TPair<K, V>> pairs_;
};

template <typename Signature>
using TFunction = std::function<Signature>;

template <typename T>
class TSharedRef;

template <typename T>
class TSharedPtr {
 public:
  TSharedPtr() = default;
  TSharedPtr(std::nullptr_t) {}
  template <typename U>
  explicit TSharedPtr(U* object) : p_(object) {}
  template <typename U>
  TSharedPtr(const TSharedRef<U>& ref) : p_(ref.p_) {}
  template <typename U>
  TSharedPtr(const TSharedPtr<U>& other) : p_(other.p_) {}
  bool IsValid() const { return p_ != nullptr; }
  T* Get() const { return p_.get(); }
  T* operator->() const { return p_.get(); }
  T& operator*() const { return *p_; }
  void Reset() { p_.reset(); }

 private:
  template <typename U>
  friend class TSharedPtr;
  std::shared_ptr<T> p_;
};

// Never null, as in Unreal (no default constructor): made by MakeShared.
template <typename T>
class TSharedRef {
 public:
  template <typename U>
  explicit TSharedRef(U* object) : p_(object) {}
  T* operator->() const { return p_.get(); }
  T& Get() const { return *p_; }

 private:
  template <typename U>
  friend class TSharedPtr;
  TSharedRef();
  std::shared_ptr<T> p_;
};

template <typename T, typename... Args>
TSharedRef<T> MakeShared(Args&&... args) { return TSharedRef<T>(new T(std::forward<Args>(args)...)); }

class UObject;
class UWorld;
namespace StandIn { void KeepObject(UObject* Object, UObject* Outer); }

// Objects live until the process ends (there is no garbage collector here):
// a TWeakObjectPtr below never goes null by itself.
class UObject {
 public:
  virtual ~UObject() = default;
  UObject* GetOuter() const { return Outer; }
  // What UEngine::GetWorldFromContextObject asks; a world or a game instance answers.
  virtual UWorld* GetWorld() const { return nullptr; }

 private:
  friend void StandIn::KeepObject(UObject* Object, UObject* Outer);
  UObject* Outer = nullptr;
};

template <typename T>
class TWeakObjectPtr {
 public:
  TWeakObjectPtr() = default;
  TWeakObjectPtr(T* p) : p_(p) {}
  T* Get() const { return p_; }
  bool IsValid() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};

template <typename To, typename From>
To* Cast(From* Object) { return dynamic_cast<To*>(Object); }
template <typename To, typename From>
const To* Cast(const From* Object) { return dynamic_cast<const To*>(Object); }

// CoreGlobals.h. The driver sets it with StandIn::SetRunningDedicatedServer.
bool IsRunningDedicatedServer();

template <typename T>
T* NewObject(UObject* Outer = nullptr) {
  T* Object = new T();
  StandIn::KeepObject(Object, Outer);
  return Object;
}
// One default object per class, as the engine's CDO, never freed. Settings
// are read from it: the driver changes them through GetMutableDefault.
template <typename T>
T* GetMutableDefault() {
  static T* Default = new T();
  return Default;
}
template <typename T>
const T* GetDefault() { return GetMutableDefault<T>(); }

// TChar<TCHAR>: ASCII classes, as Unreal's for these.
struct FChar {
  static bool IsWhitespace(TCHAR C) { return C == u' ' || C == u'\t' || C == u'\n' || C == u'\r' || C == u'\v' || C == u'\f'; }
  static bool IsDigit(TCHAR C) { return C >= u'0' && C <= u'9'; }
  static bool IsAlpha(TCHAR C) { return (C >= u'a' && C <= u'z') || (C >= u'A' && C <= u'Z'); }
  static TCHAR ToUpper(TCHAR C) { return (C >= u'a' && C <= u'z') ? static_cast<TCHAR>(C - 32) : C; }
  static TCHAR ToLower(TCHAR C) { return (C >= u'A' && C <= u'Z') ? static_cast<TCHAR>(C + 32) : C; }
};

struct FMath {
  template <typename T>
  static T Max(T a, T b) { return a < b ? b : a; }
};

// Real UTF-16 <-> UTF-8 conversion (an unpaired surrogate or a bad byte becomes U+FFFD).
class FTCHARToUTF8 {
 public:
  explicit FTCHARToUTF8(const TCHAR* s);
  const ANSICHAR* Get() const { return out_.c_str(); }
  int32 Length() const { return static_cast<int32>(out_.size()); }

 private:
  std::string out_;
};
class FUTF8ToTCHAR {
 public:
  explicit FUTF8ToTCHAR(const ANSICHAR* s);
  const TCHAR* Get() const { return out_.c_str(); }
  int32 Length() const { return static_cast<int32>(out_.size()); }

 private:
  std::u16string out_;
};

struct TStatId {};
#define RETURN_QUICK_DECLARE_CYCLE_STAT(Name, Group) return TStatId()

struct FPlatformProcess {
  static void* GetDllHandle(const TCHAR* path);
  static void FreeDllHandle(void* handle);
  // The running executable's folder, with a trailing '/'.
  static const TCHAR* BaseDir();
  static void Sleep(float Seconds);
};

// Included by Unreal's CoreMinimal.h too.
#include "Delegates/Delegate.h"
#include "Logging/LogMacros.h"
