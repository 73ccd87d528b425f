// STAND-IN, not Unreal: the out-of-line half of the imitation engine (see
// CoreMinimal.h), POSIX only: it is linked into the test driver
// clients/unreal/checks/run/plugin_run_test.cpp, never into a game.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "CoreMinimal.h"
#include "Dom/JsonObject.h"
#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "Engine/World.h"
#include "HAL/FileManager.h"
#include "Interfaces/IPluginManager.h"
#include "Kismet/BlueprintAsyncActionBase.h"
#include "Misc/Base64.h"
#include "Misc/Paths.h"
#include "Serialization/JsonSerializer.h"
#include "StandInControl.h"
#include "Subsystems/GameInstanceSubsystem.h"

namespace {
std::string Utf8(const FString& Text) { return FTCHARToUTF8(*Text).Get(); }
FString FromUtf8(const std::string& Text) { return FUTF8ToTCHAR(Text.c_str()).Get(); }

// Unreal's case folding for TCHAR is ASCII's.
TCHAR Lower(TCHAR C) { return (C >= u'A' && C <= u'Z') ? static_cast<TCHAR>(C + 32) : C; }
TCHAR Upper(TCHAR C) { return (C >= u'a' && C <= u'z') ? static_cast<TCHAR>(C - 32) : C; }
bool SameChar(TCHAR A, TCHAR B, ESearchCase::Type Case) {
  return Case == ESearchCase::CaseSensitive ? A == B : Lower(A) == Lower(B);
}
bool SameSpan(const TCHAR* A, const TCHAR* B, size_t N, ESearchCase::Type Case) {
  for (size_t i = 0; i < N; ++i) if (!SameChar(A[i], B[i], Case)) return false;
  return true;
}
size_t Length(const TCHAR* S) { return std::char_traits<TCHAR>::length(S); }
bool IsSpace(TCHAR C) { return C == u' ' || C == u'\t' || C == u'\n' || C == u'\r' || C == u'\v' || C == u'\f'; }
bool IsSlash(TCHAR C) { return C == u'/' || C == u'\\'; }

void AppendUtf8(std::string& Out, uint32_t Code) {
  if (Code < 0x80) {
    Out += static_cast<char>(Code);
  } else if (Code < 0x800) {
    Out += static_cast<char>(0xC0 | (Code >> 6));
    Out += static_cast<char>(0x80 | (Code & 0x3F));
  } else if (Code < 0x10000) {
    Out += static_cast<char>(0xE0 | (Code >> 12));
    Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
    Out += static_cast<char>(0x80 | (Code & 0x3F));
  } else {
    Out += static_cast<char>(0xF0 | (Code >> 18));
    Out += static_cast<char>(0x80 | ((Code >> 12) & 0x3F));
    Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
    Out += static_cast<char>(0x80 | (Code & 0x3F));
  }
}
}  // namespace

// ---- FString ----

bool FString::Equals(const FString& o, ESearchCase::Type c) const {
  return s_.size() == o.s_.size() && SameSpan(s_.data(), o.s_.data(), s_.size(), c);
}

bool FString::Contains(const TCHAR* sub, ESearchCase::Type c) const {
  const size_t n = Length(sub);
  if (n > s_.size()) return false;
  for (size_t i = 0; i + n <= s_.size(); ++i) if (SameSpan(s_.data() + i, sub, n, c)) return true;
  return false;
}

bool FString::StartsWith(const FString& prefix, ESearchCase::Type c) const {
  return prefix.s_.size() <= s_.size() && SameSpan(s_.data(), prefix.s_.data(), prefix.s_.size(), c);
}

bool FString::EndsWith(const FString& suffix, ESearchCase::Type c) const {
  return suffix.s_.size() <= s_.size() &&
         SameSpan(s_.data() + s_.size() - suffix.s_.size(), suffix.s_.data(), suffix.s_.size(), c);
}

FString FString::TrimStartAndEnd() const {
  size_t first = 0, last = s_.size();
  while (first < last && IsSpace(s_[first])) ++first;
  while (last > first && IsSpace(s_[last - 1])) --last;
  return FString(static_cast<int32>(last - first), s_.data() + first);
}

FString FString::ToUpper() const {
  FString r = *this;
  for (TCHAR& C : r.s_) C = Upper(C);
  return r;
}

bool FString::operator<(const FString& o) const {
  const size_t n = std::min(s_.size(), o.s_.size());
  for (size_t i = 0; i < n; ++i) {
    if (Lower(s_[i]) != Lower(o.s_[i])) return Lower(s_[i]) < Lower(o.s_[i]);
  }
  return s_.size() < o.s_.size();
}

// FString::PathAppend: one '/' between the parts unless either side has one.
FString operator/(const FString& a, const TCHAR* b) {
  FString r = a;
  const bool Slashed = !r.s_.empty() && IsSlash(r.s_.back());
  if (*b == 0) {
    if (!r.s_.empty() && !Slashed) r.s_ += u'/';
  } else {
    if (!r.s_.empty() && !Slashed && *b != u'/') r.s_ += u'/';
    r.s_ += b;
  }
  return r;
}
FString operator/(const FString& a, const FString& b) { return a / *b; }

// ---- FString::Printf ----

namespace StandIn {
namespace {
[[noreturn]] void BadFormat(const TCHAR* Format, const char* Why) {
  std::fprintf(stderr, "FString::Printf(\"%s\"): %s\n", FTCHARToUTF8(Format).Get(), Why);
  std::abort();
}
}  // namespace

FString FormatString(const TCHAR* Format, const FFormatArg* Args, size_t Count) {
  FString Out;
  size_t Next = 0;
  char Buffer[512];
  for (const TCHAR* p = Format; *p != 0; ++p) {
    if (*p != u'%') {
      Out += *p;
      continue;
    }
    if (*++p == u'%') {
      Out += u'%';
      continue;
    }
    std::string Spec = "%";
    bool LeftAlign = false;
    while (*p == u'-' || *p == u'+' || *p == u' ' || *p == u'#' || *p == u'0') {
      LeftAlign = LeftAlign || *p == u'-';
      Spec += static_cast<char>(*p++);
    }
    int Width = 0, Precision = -1;
    while (*p >= u'0' && *p <= u'9') {
      Width = Width * 10 + (*p - u'0');
      Spec += static_cast<char>(*p++);
    }
    if (*p == u'.') {
      Spec += static_cast<char>(*p++);
      Precision = 0;
      while (*p >= u'0' && *p <= u'9') {
        Precision = Precision * 10 + (*p - u'0');
        Spec += static_cast<char>(*p++);
      }
    }
    // The length: the argument came widened, but a size the specifier does not
    // read is what corrupts a real varargs call (an int64 to %d).
    std::string LengthMod;
    while (*p == u'h' || *p == u'l' || *p == u'z' || *p == u'j' || *p == u't' || *p == u'L') LengthMod += static_cast<char>(*p++);
    const TCHAR Conversion = *p;
    if (Conversion == 0) BadFormat(Format, "the format ends inside a specifier");
    if (Next >= Count) BadFormat(Format, "more specifiers than arguments");
    const FFormatArg& Arg = Args[Next++];
    const bool Integer = Arg.Kind == FFormatArg::EKind::Signed || Arg.Kind == FFormatArg::EKind::Unsigned;
    const bool Wide = LengthMod == "ll" || LengthMod == "j" || LengthMod == "z" || LengthMod == "t";
    switch (Conversion) {
      case u'd': case u'i': case u'u': case u'x': case u'X': case u'o': case u'c': {
        if (!Integer) BadFormat(Format, "an integer specifier without an integer argument");
        if (Conversion != u'c' && LengthMod != "l" && Wide != (Arg.Size == 8)) {
          BadFormat(Format, Arg.Size == 8 ? "a 64-bit argument to a specifier without ll" : "ll on an argument under 64 bits");
        }
        if (Conversion == u'c') {
          Out += static_cast<TCHAR>(Arg.Kind == FFormatArg::EKind::Signed ? Arg.Signed : static_cast<long long>(Arg.Unsigned));
          continue;
        }
        if (Conversion == u'd' || Conversion == u'i') {
          const long long Value = Arg.Kind == FFormatArg::EKind::Signed ? Arg.Signed : static_cast<long long>(Arg.Unsigned);
          std::snprintf(Buffer, sizeof Buffer, (Spec + "lld").c_str(), Value);
        } else {
          unsigned long long Value = Arg.Unsigned;
          if (Arg.Kind == FFormatArg::EKind::Signed) {
            // The argument's own width, as the varargs call would have read it.
            Value = static_cast<unsigned long long>(Arg.Signed);
            if (Arg.Size < 8) Value &= (1ULL << (8 * Arg.Size)) - 1;
          }
          std::snprintf(Buffer, sizeof Buffer, (Spec + "ll" + static_cast<char>(Conversion)).c_str(), Value);
        }
        Out += *FromUtf8(Buffer);
        continue;
      }
      case u'f': case u'F': case u'e': case u'E': case u'g': case u'G': case u'a': case u'A':
        if (Arg.Kind != FFormatArg::EKind::Double) BadFormat(Format, "a floating-point specifier without a float argument");
        std::snprintf(Buffer, sizeof Buffer, (Spec + static_cast<char>(Conversion)).c_str(), Arg.Double);
        Out += *FromUtf8(Buffer);
        continue;
      case u's': {
        if (Arg.Kind != FFormatArg::EKind::Text) BadFormat(Format, "%s without a TCHAR* argument (an FString goes in as *String)");
        FString Text = Arg.Text ? FString(Arg.Text) : FString(TEXT("(null)"));
        if (Precision >= 0 && Text.Len() > Precision) Text = FString(Precision, *Text);
        FString Pad;
        for (int32 i = Text.Len(); i < Width; ++i) Pad += u' ';
        Out += LeftAlign ? Text + Pad : Pad + Text;
        continue;
      }
      case u'p':
        std::snprintf(Buffer, sizeof Buffer, "%p", Arg.Kind == FFormatArg::EKind::Text ? static_cast<const void*>(Arg.Text) : Arg.Pointer);
        Out += *FromUtf8(Buffer);
        continue;
      default:
        BadFormat(Format, "an unknown specifier");
    }
  }
  if (Next != Count) BadFormat(Format, "more arguments than specifiers");
  return Out;
}
}  // namespace StandIn

// ---- UTF-16 <-> UTF-8 ----

FTCHARToUTF8::FTCHARToUTF8(const TCHAR* s) {
  for (; s != nullptr && *s != 0; ++s) {
    uint32_t Code = *s;
    if (Code >= 0xD800 && Code <= 0xDBFF && s[1] >= 0xDC00 && s[1] <= 0xDFFF) {
      Code = 0x10000 + ((Code - 0xD800) << 10) + (static_cast<uint32_t>(s[1]) - 0xDC00);
      ++s;
    } else if (Code >= 0xD800 && Code <= 0xDFFF) {
      Code = 0xFFFD;  // an unpaired surrogate
    }
    AppendUtf8(out_, Code);
  }
}

FUTF8ToTCHAR::FUTF8ToTCHAR(const ANSICHAR* s) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s ? s : "");
  while (*p != 0) {
    uint32_t Code = 0xFFFD;
    int Extra = 0;
    uint32_t Min = 0;
    if (*p < 0x80) {
      Code = *p;
    } else if ((*p & 0xE0) == 0xC0) {
      Code = *p & 0x1F, Extra = 1, Min = 0x80;
    } else if ((*p & 0xF0) == 0xE0) {
      Code = *p & 0x0F, Extra = 2, Min = 0x800;
    } else if ((*p & 0xF8) == 0xF0) {
      Code = *p & 0x07, Extra = 3, Min = 0x10000;
    }
    ++p;
    int Read = 0;
    while (Read < Extra && (*p & 0xC0) == 0x80) {
      Code = (Code << 6) | (*p++ & 0x3F);
      ++Read;
    }
    // A short or overlong sequence, a surrogate, or beyond U+10FFFF: one U+FFFD.
    if (Read < Extra || (Extra > 0 && Code < Min) || (Code >= 0xD800 && Code <= 0xDFFF) || Code > 0x10FFFF) Code = 0xFFFD;
    if (Code >= 0x10000) {
      out_ += static_cast<char16_t>(0xD800 + ((Code - 0x10000) >> 10));
      out_ += static_cast<char16_t>(0xDC00 + ((Code - 0x10000) & 0x3FF));
    } else {
      out_ += static_cast<char16_t>(Code);
    }
  }
}

// ---- UE_LOG ----

FLogCategoryStandIn LogTemp{"LogTemp"};

namespace {
std::mutex GLogMutex;
ELogVerbosity::Type GLogPrintLevel = ELogVerbosity::All;
StandIn::FLogHook GLogHook;

const char* VerbosityName(ELogVerbosity::Type Verbosity) {
  switch (Verbosity) {
    case ELogVerbosity::Fatal: return "Fatal";
    case ELogVerbosity::Error: return "Error";
    case ELogVerbosity::Warning: return "Warning";
    case ELogVerbosity::Display: return "Display";
    case ELogVerbosity::Log: return "Log";
    case ELogVerbosity::Verbose: return "Verbose";
    default: return "VeryVerbose";
  }
}
}  // namespace

void StandIn::SetLogPrintLevel(ELogVerbosity::Type Level) {
  std::lock_guard<std::mutex> Lock(GLogMutex);
  GLogPrintLevel = Level;
}

void StandIn::SetLogHook(FLogHook Hook) {
  std::lock_guard<std::mutex> Lock(GLogMutex);
  GLogHook = MoveTemp(Hook);
}

void StandIn::WriteLog(const FLogCategoryStandIn& Category, ELogVerbosity::Type Verbosity, const FString& Text) {
  FLogHook Hook;
  {
    std::lock_guard<std::mutex> Lock(GLogMutex);
    Hook = GLogHook;
    if (Verbosity <= GLogPrintLevel) {
      // The engine's console: "LogX: Warning: text", and no verbosity for Log.
      if (Verbosity == ELogVerbosity::Log) {
        std::fprintf(stderr, "%s: %s\n", Category.Name, Utf8(Text).c_str());
      } else {
        std::fprintf(stderr, "%s: %s: %s\n", Category.Name, VerbosityName(Verbosity), Utf8(Text).c_str());
      }
    }
  }
  if (Hook) Hook(Category.Name, Verbosity, Text);
  if (Verbosity == ELogVerbosity::Fatal) std::abort();
}

// ---- FPlatformProcess, globals, objects ----

void* FPlatformProcess::GetDllHandle(const TCHAR* path) { return dlopen(FTCHARToUTF8(path).Get(), RTLD_NOW | RTLD_LOCAL); }

void FPlatformProcess::FreeDllHandle(void* handle) {
  if (handle != nullptr) dlclose(handle);
}

const TCHAR* FPlatformProcess::BaseDir() {
  static const FString Dir = [] {
    char Path[PATH_MAX] = {};
    const ssize_t N = readlink("/proc/self/exe", Path, sizeof Path - 1);
    std::string Exe = N > 0 ? std::string(Path, static_cast<size_t>(N)) : std::string("./");
    return FromUtf8(Exe.substr(0, Exe.rfind('/') + 1));
  }();
  return *Dir;
}

void FPlatformProcess::Sleep(float Seconds) {
  std::this_thread::sleep_for(std::chrono::duration<float>(Seconds));
}

namespace {
bool GDedicatedServer = false;
FString GProjectDir, GProjectSavedDir;
UEngine GEngineObject;

FString WithSlash(const FString& Dir) { return Dir / TEXT(""); }
}  // namespace

UEngine* GEngine = &GEngineObject;

bool IsRunningDedicatedServer() { return GDedicatedServer; }
void StandIn::SetRunningDedicatedServer(bool bDedicated) { GDedicatedServer = bDedicated; }
void StandIn::SetProjectDir(const FString& Dir) { GProjectDir = WithSlash(Dir); }
void StandIn::SetProjectSavedDir(const FString& Dir) { GProjectSavedDir = WithSlash(Dir); }

void StandIn::KeepObject(UObject* Object, UObject* Outer) {
  // Reachable until the process ends: there is no garbage collector here.
  static std::vector<UObject*>* Objects = new std::vector<UObject*>();
  Object->Outer = Outer;
  Objects->push_back(Object);
}

UWorld* UEngine::GetWorldFromContextObject(const UObject* Object, EGetWorldErrorMode ErrorMode) const {
  UWorld* World = Object != nullptr ? Object->GetWorld() : nullptr;
  if (World == nullptr && ErrorMode == EGetWorldErrorMode::LogAndReturnNull) {
    UE_LOG(LogTemp, Warning, TEXT("UEngine::GetWorldFromContextObject: no world for the context object"));
  }
  if (World == nullptr && ErrorMode == EGetWorldErrorMode::Assert) {
    UE_LOG(LogTemp, Fatal, TEXT("UEngine::GetWorldFromContextObject: no world for the context object"));
  }
  return World;
}

// ---- Game instances, subsystems, async actions ----

struct StandIn::FGameInstanceAccess {
  static void SetWorldContext(UGameInstance* Instance, FWorldContext* Context) { Instance->WorldContext = Context; }
  static void AddSubsystem(UGameInstance* Instance, USubsystem* Subsystem) { Instance->Subsystems.Add(Subsystem); }
  static bool IsReferenced(const UGameInstance* Instance, const UObject* Object) {
    return Instance->ReferencedObjects.Contains(const_cast<UObject*>(Object));
  }
};

UWorld* UGameInstance::GetWorld() const { return WorldContext != nullptr ? WorldContext->World() : nullptr; }

void UGameInstance::RegisterReferencedObject(UObject* ObjectToReference) {
  if (!ReferencedObjects.Contains(ObjectToReference)) ReferencedObjects.Add(ObjectToReference);
}

void UGameInstance::UnregisterReferencedObject(UObject* ObjectToReference) { ReferencedObjects.Remove(ObjectToReference); }

UGameInstance* StandIn::NewGameInstance(EWorldType::Type WorldType, int32 PIEInstance, bool bRunAsDedicated) {
  FWorldContext* Context = new FWorldContext();  // lives as long as its game instance: until the process ends
  Context->WorldType = WorldType;
  Context->PIEInstance = PIEInstance;
  Context->RunAsDedicated = bRunAsDedicated;
  UGameInstance* Instance = NewObject<UGameInstance>();
  UWorld* World = NewObject<UWorld>(Instance);
  World->OwningGameInstance = Instance;
  Context->SetCurrentWorld(World);
  FGameInstanceAccess::SetWorldContext(Instance, Context);
  return Instance;
}

void StandIn::AddSubsystem(UGameInstance* Instance, USubsystem* Subsystem) { FGameInstanceAccess::AddSubsystem(Instance, Subsystem); }

bool StandIn::IsReferenced(const UGameInstance* Instance, const UObject* Object) {
  return FGameInstanceAccess::IsReferenced(Instance, Object);
}

UGameInstance* UGameInstanceSubsystem::GetGameInstance() const { return Cast<UGameInstance>(GetOuter()); }

void UBlueprintAsyncActionBase::Activate() {}

void UBlueprintAsyncActionBase::RegisterWithGameInstance(const UObject* WorldContextObject) {
  UWorld* World = GEngine->GetWorldFromContextObject(WorldContextObject, EGetWorldErrorMode::LogAndReturnNull);
  if (World != nullptr && World->GetGameInstance() != nullptr) {
    RegisterWithGameInstance(World->GetGameInstance());
  }
}

void UBlueprintAsyncActionBase::RegisterWithGameInstance(UGameInstance* GameInstance) {
  if (GameInstance == nullptr) return;
  if (UGameInstance* Old = RegisteredWithGameInstance.Get()) Old->UnregisterReferencedObject(this);
  GameInstance->RegisterReferencedObject(this);
  RegisteredWithGameInstance = GameInstance;
}

void UBlueprintAsyncActionBase::SetReadyToDestroy() {
  if (UGameInstance* Instance = RegisteredWithGameInstance.Get()) Instance->UnregisterReferencedObject(this);
}

// ---- FBase64 ----

namespace {
const char GBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

FString FBase64::Encode(const TArray<uint8>& Source) {
  std::string Out;
  const int32 N = Source.Num();
  for (int32 i = 0; i < N; i += 3) {
    const uint32_t B = (uint32_t(Source[i]) << 16) | (i + 1 < N ? uint32_t(Source[i + 1]) << 8 : 0) | (i + 2 < N ? Source[i + 2] : 0);
    Out += GBase64Alphabet[(B >> 18) & 63];
    Out += GBase64Alphabet[(B >> 12) & 63];
    Out += i + 1 < N ? GBase64Alphabet[(B >> 6) & 63] : '=';
    Out += i + 2 < N ? GBase64Alphabet[B & 63] : '=';
  }
  return FromUtf8(Out);
}

bool FBase64::Decode(const FString& Source, TArray<uint8>& OutDest) {
  OutDest.Empty();
  uint32_t Bits = 0;
  int Count = 0, Padding = 0;
  for (const TCHAR C : Source) {
    const char* Found = C < 128 && C != 0 ? std::strchr(GBase64Alphabet, static_cast<char>(C)) : nullptr;
    if (C == u'=') {
      ++Padding;
      continue;
    }
    if (Found == nullptr || Padding > 0) {
      OutDest.Empty();
      return false;
    }
    Bits = (Bits << 6) | static_cast<uint32_t>(Found - GBase64Alphabet);
    if (++Count == 4) {
      OutDest.Add(static_cast<uint8>(Bits >> 16));
      OutDest.Add(static_cast<uint8>(Bits >> 8));
      OutDest.Add(static_cast<uint8>(Bits));
      Bits = 0;
      Count = 0;
    }
  }
  if (Count == 1 || Padding > 2 || (Count == 0 && Padding > 0) || (Count > 0 && Count + Padding != 4)) {
    OutDest.Empty();
    return false;
  }
  if (Count >= 2) OutDest.Add(static_cast<uint8>(Bits >> (Count == 2 ? 4 : 10)));
  if (Count == 3) OutDest.Add(static_cast<uint8>(Bits >> 2));
  return true;
}

// ---- FPaths, IFileManager, IPluginManager ----

namespace {
bool IsDirectory(const std::string& Path) {
  struct stat Info;
  return stat(Path.c_str(), &Info) == 0 && S_ISDIR(Info.st_mode);
}
}  // namespace

FString FPaths::ProjectDir() { return GProjectDir.IsEmpty() ? FString(FPlatformProcess::BaseDir()) : GProjectDir; }

FString FPaths::ProjectSavedDir() { return GProjectSavedDir.IsEmpty() ? ProjectDir() / TEXT("Saved/") : GProjectSavedDir; }

FString FPaths::ProjectPluginsDir() { return ProjectDir() / TEXT("Plugins/"); }

bool FPaths::IsRelative(const FString& Path) {
  const TCHAR* P = *Path;
  const bool Rooted = IsSlash(P[0]) || (P[0] != 0 && P[1] == u':' && ((P[0] >= u'A' && P[0] <= u'Z') || (P[0] >= u'a' && P[0] <= u'z')));
  return !Rooted;
}

FString FPaths::ConvertRelativePathToFull(const FString& Path) {
  const FString Joined = IsRelative(Path) ? FString(FPlatformProcess::BaseDir()) / Path : Path;
  // Collapse: '\' to '/', no empty or "." parts, ".." takes the part before it away.
  std::vector<FString> Parts;
  FString Part;
  const bool Trailing = !Joined.IsEmpty() && IsSlash((*Joined)[Joined.Len() - 1]);
  auto Flush = [&Parts, &Part]() {
    if (Part.Equals(TEXT(".")) || Part.IsEmpty()) {
    } else if (Part.Equals(TEXT("..")) && !Parts.empty() && !Parts.back().Equals(TEXT(".."))) {
      Parts.pop_back();
    } else {
      Parts.push_back(Part);
    }
    Part.Reset();
  };
  for (const TCHAR C : Joined) {
    if (IsSlash(C)) Flush(); else Part += C;
  }
  Flush();
  FString Full = IsSlash((*Joined)[0]) ? FString(TEXT("/")) : FString();
  for (size_t i = 0; i < Parts.size(); ++i) Full += (i == 0 ? FString() : FString(TEXT("/"))) + Parts[i];
  if (Trailing && !Full.EndsWith(TEXT("/"))) Full += TEXT("/");
  return Full;
}

bool FPaths::FileExists(const FString& Path) {
  struct stat Info;
  return stat(Utf8(Path).c_str(), &Info) == 0 && S_ISREG(Info.st_mode);
}

namespace {
class FStandInFileManager : public IFileManager {
 public:
  bool MakeDirectory(const TCHAR* Path, bool Tree) override {
    const std::string Dir = Utf8(Path);
    if (Tree) {
      for (size_t Slash = Dir.find('/', 1); Slash != std::string::npos; Slash = Dir.find('/', Slash + 1)) {
        mkdir(Dir.substr(0, Slash).c_str(), 0777);
      }
    }
    mkdir(Dir.c_str(), 0777);
    return IsDirectory(Dir);
  }
};

class FStandInPlugin : public IPlugin {
 public:
  explicit FStandInPlugin(const FString& InDir) : Dir(InDir) {}
  FString GetBaseDir() const override { return Dir; }

 private:
  FString Dir;
};

class FStandInPluginManager : public IPluginManager {
 public:
  TSharedPtr<IPlugin> FindPlugin(const TCHAR* Name) override {
    const FString Dir = FPaths::ProjectPluginsDir() / Name;
    return IsDirectory(Utf8(Dir)) ? TSharedPtr<IPlugin>(new FStandInPlugin(Dir)) : TSharedPtr<IPlugin>();
  }
};
}  // namespace

IFileManager& IFileManager::Get() {
  static FStandInFileManager Manager;
  return Manager;
}

IPluginManager& IPluginManager::Get() {
  static FStandInPluginManager Manager;
  return Manager;
}

// ---- JSON ----

namespace {
FLogCategoryStandIn LogJson{"LogJson"};

class FJsonParser {
 public:
  explicit FJsonParser(const FString& Text) : P(*Text), End(*Text + Text.Len()) {}

  bool Object(TSharedPtr<FJsonObject>& Out, int Depth) {
    if (Depth > 64 || !Take(u'{')) return false;
    Out = TSharedPtr<FJsonObject>(new FJsonObject());
    if (Take(u'}')) return true;
    do {
      FString Key;
      TSharedPtr<FJsonValue> Value;
      if (!String(Key) || !Take(u':') || !Value_(Value, Depth)) return false;
      Out->Values.Add(Key, Value);
    } while (Take(u','));
    return Take(u'}');
  }

  bool AtEnd() {
    Space();
    return P == End;
  }

 private:
  void Space() { while (P < End && IsSpace(*P)) ++P; }
  bool Take(TCHAR C) {
    Space();
    if (P < End && *P == C) {
      ++P;
      return true;
    }
    return false;
  }
  bool Word(const char* W) {
    const size_t N = std::strlen(W);
    if (static_cast<size_t>(End - P) < N) return false;
    for (size_t i = 0; i < N; ++i) if (P[i] != static_cast<TCHAR>(W[i])) return false;
    P += N;
    return true;
  }
  static int Hex(TCHAR C) {
    if (C >= u'0' && C <= u'9') return C - u'0';
    if (C >= u'a' && C <= u'f') return C - u'a' + 10;
    if (C >= u'A' && C <= u'F') return C - u'A' + 10;
    return -1;
  }
  bool String(FString& Out) {
    if (!Take(u'"')) return false;
    while (P < End && *P != u'"') {
      TCHAR C = *P++;
      if (C < 0x20) return false;
      if (C == u'\\') {
        if (P == End) return false;
        switch (*P++) {
          case u'"': C = u'"'; break;
          case u'\\': C = u'\\'; break;
          case u'/': C = u'/'; break;
          case u'b': C = u'\b'; break;
          case u'f': C = u'\f'; break;
          case u'n': C = u'\n'; break;
          case u'r': C = u'\r'; break;
          case u't': C = u'\t'; break;
          case u'u': {
            // One UTF-16 unit: a pair (\ud83d\ude00) arrives as its two units.
            int Code = 0;
            for (int i = 0; i < 4; ++i) {
              const int H = P < End ? Hex(*P++) : -1;
              if (H < 0) return false;
              Code = Code * 16 + H;
            }
            C = static_cast<TCHAR>(Code);
            break;
          }
          default: return false;
        }
      }
      Out += C;
    }
    return Take(u'"');
  }
  bool Number(double& Out) {
    std::string Ascii;
    auto Digits = [this, &Ascii]() {
      const size_t Before = Ascii.size();
      while (P < End && *P >= u'0' && *P <= u'9') Ascii += static_cast<char>(*P++);
      return Ascii.size() > Before;
    };
    if (P < End && *P == u'-') Ascii += static_cast<char>(*P++);
    if (!Digits()) return false;
    if (P < End && *P == u'.') {
      Ascii += static_cast<char>(*P++);
      if (!Digits()) return false;
    }
    if (P < End && (*P == u'e' || *P == u'E')) {
      Ascii += static_cast<char>(*P++);
      if (P < End && (*P == u'+' || *P == u'-')) Ascii += static_cast<char>(*P++);
      if (!Digits()) return false;
    }
    Out = std::strtod(Ascii.c_str(), nullptr);
    return true;
  }
  bool Value_(TSharedPtr<FJsonValue>& Out, int Depth) {
    Space();
    if (P == End) return false;
    if (*P == u'"') {
      FString Text;
      if (!String(Text)) return false;
      Out = TSharedPtr<FJsonValue>(new FJsonValueString(Text));
      return true;
    }
    if (*P == u'{') {
      TSharedPtr<FJsonObject> Nested;
      if (!Object(Nested, Depth + 1)) return false;
      Out = TSharedPtr<FJsonValue>(new FJsonValueObject(Nested));
      return true;
    }
    if (*P == u'[') {
      ++P;
      TArray<TSharedPtr<FJsonValue>> Items;
      if (!Take(u']')) {
        do {
          TSharedPtr<FJsonValue> Item;
          if (Depth > 64 || !Value_(Item, Depth + 1)) return false;
          Items.Add(Item);
        } while (Take(u','));
        if (!Take(u']')) return false;
      }
      Out = TSharedPtr<FJsonValue>(new FJsonValueArray(Items));
      return true;
    }
    if (Word("true") || Word("false")) {
      Out = TSharedPtr<FJsonValue>(new FJsonValueBoolean(P[-1] == u'e' && P[-2] == u'u'));
      return true;
    }
    if (Word("null")) {
      Out = TSharedPtr<FJsonValue>(new FJsonValueNull());
      return true;
    }
    double Number_ = 0;
    if (!Number(Number_)) return false;
    Out = TSharedPtr<FJsonValue>(new FJsonValueNumber(Number_));
    return true;
  }

  const TCHAR* P;
  const TCHAR* End;
};

// FString::IsNumeric: an optional sign, digits, at most one '.'.
bool IsNumeric(const FString& Text) {
  const TCHAR* P = *Text;
  if (*P == u'-' || *P == u'+') ++P;
  bool Digit = false, Dot = false;
  for (; *P != 0; ++P) {
    if (*P >= u'0' && *P <= u'9') Digit = true;
    else if (*P == u'.' && !Dot) Dot = true;
    else return false;
  }
  return Digit;
}

// Rounded half away from zero; false when out of Int's range.
template <typename Int>
bool ToInteger(double D, Int& Out) {
  D = std::round(D);
  if (D < static_cast<double>(std::numeric_limits<Int>::min()) || D >= -static_cast<double>(std::numeric_limits<Int>::min())) {
    return false;
  }
  Out = static_cast<Int>(D);
  return true;
}

const char* TypeName(EJson Type) {
  switch (Type) {
    case EJson::Null: return "Null";
    case EJson::String: return "String";
    case EJson::Number: return "Number";
    case EJson::Boolean: return "Boolean";
    case EJson::Array: return "Array";
    case EJson::Object: return "Object";
    default: return "None";
  }
}
}  // namespace

bool StandIn::ParseJsonObject(const FString& Json, TSharedPtr<FJsonObject>& OutObject) {
  TSharedPtr<FJsonObject> Object;
  FJsonParser Parser(Json);
  if (!Parser.Object(Object, 0) || !Parser.AtEnd()) return false;
  OutObject = Object;
  return true;
}

bool FJsonValue::TryGetNumber(int32& OutNumber) const {
  double D;
  return TryGetNumber(D) && ToInteger(D, OutNumber);
}

bool FJsonValue::TryGetNumber(int64& OutNumber) const {
  double D;
  return TryGetNumber(D) && ToInteger(D, OutNumber);
}

void FJsonValue::ErrorMessage(const TCHAR* InType) const {
  UE_LOG(LogJson, Error, TEXT("Json Value of type '%s' used as a '%s'."), *FromUtf8(TypeName(Type)), InType);
}

double FJsonValue::AsNumber() const {
  double Number = 0;
  if (!TryGetNumber(Number)) ErrorMessage(TEXT("Number"));
  return Number;
}

FString FJsonValue::AsString() const {
  FString String;
  if (!TryGetString(String)) ErrorMessage(TEXT("String"));
  return String;
}

bool FJsonValue::AsBool() const {
  bool Bool = false;
  if (!TryGetBool(Bool)) ErrorMessage(TEXT("Boolean"));
  return Bool;
}

const TArray<TSharedPtr<FJsonValue>>& FJsonValue::AsArray() const {
  static const TArray<TSharedPtr<FJsonValue>> Empty;
  const TArray<TSharedPtr<FJsonValue>>* Array = &Empty;
  if (!TryGetArray(Array)) ErrorMessage(TEXT("Array"));
  return *Array;
}

// As in the engine, the wrong type answers an empty object (valid), not null.
const TSharedPtr<FJsonObject>& FJsonValue::AsObject() const {
  static const TSharedPtr<FJsonObject> Empty(new FJsonObject());
  const TSharedPtr<FJsonObject>* Object = &Empty;
  if (!TryGetObject(Object)) ErrorMessage(TEXT("Object"));
  return *Object;
}

bool FJsonValueString::TryGetNumber(double& OutNumber) const {
  if (!IsNumeric(Value)) return false;
  OutNumber = std::strtod(Utf8(Value).c_str(), nullptr);
  return true;
}

// proto3 JSON's int64 is a string: read it exactly, not through a double.
bool FJsonValueString::TryGetNumber(int64& OutNumber) const {
  const std::string Text = Utf8(Value);
  char* EndPtr = nullptr;
  errno = 0;
  const long long Parsed = std::strtoll(Text.c_str(), &EndPtr, 10);
  if (!Text.empty() && EndPtr != nullptr && *EndPtr == '\0' && errno == 0) {
    OutNumber = Parsed;
    return true;
  }
  return FJsonValue::TryGetNumber(OutNumber);
}

bool FJsonValueString::TryGetBool(bool& OutBool) const {
  if (Value == TEXT("true") || Value == TEXT("false")) {
    OutBool = Value == TEXT("true");
    return true;
  }
  return false;
}

bool FJsonValueNumber::TryGetString(FString& OutString) const {
  char Buffer[64];
  if (Value == std::floor(Value) && std::fabs(Value) < 1e15) {
    std::snprintf(Buffer, sizeof Buffer, "%lld", static_cast<long long>(Value));
  } else {
    std::snprintf(Buffer, sizeof Buffer, "%.17g", Value);
  }
  OutString = FromUtf8(Buffer);
  return true;
}

TSharedPtr<FJsonValue> FJsonObject::TryGetField(const FString& FieldName) const {
  const TSharedPtr<FJsonValue>* Found = Values.Find(FieldName);
  return Found != nullptr ? *Found : TSharedPtr<FJsonValue>();
}

bool FJsonObject::TryGetNumberField(const FString& FieldName, int32& OutNumber) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetNumber(OutNumber);
}
bool FJsonObject::TryGetNumberField(const FString& FieldName, int64& OutNumber) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetNumber(OutNumber);
}
bool FJsonObject::TryGetNumberField(const FString& FieldName, double& OutNumber) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetNumber(OutNumber);
}
bool FJsonObject::TryGetBoolField(const FString& FieldName, bool& OutBool) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetBool(OutBool);
}
bool FJsonObject::TryGetStringField(const FString& FieldName, FString& OutString) const {
  const TSharedPtr<FJsonValue> Field = TryGetField(FieldName);
  return Field.IsValid() && Field->TryGetString(OutString);
}
bool FJsonObject::TryGetArrayField(const FString& FieldName, const TArray<TSharedPtr<FJsonValue>>*& OutArray) const {
  const TSharedPtr<FJsonValue>* Field = Values.Find(FieldName);
  return Field != nullptr && Field->IsValid() && (*Field)->TryGetArray(OutArray);
}
bool FJsonObject::TryGetObjectField(const FString& FieldName, const TSharedPtr<FJsonObject>*& OutObject) const {
  const TSharedPtr<FJsonValue>* Field = Values.Find(FieldName);
  return Field != nullptr && Field->IsValid() && (*Field)->TryGetObject(OutObject);
}
