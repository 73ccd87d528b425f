// STAND-IN (see CoreMinimal.h): UE_LOG, FPlatformProcess, objects, game instances,
// subsystems, async actions, FPaths, IFileManager, IPluginManager.
#include "StandInInternal.h"

using namespace StandInText;

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
