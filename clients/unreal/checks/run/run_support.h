// What the plugin run test's cases share (plugin_run_test.cpp, plugin_run_blueprint.cpp):
// the CHECK macro, the engine's frame loop, the project settings, a game instance
// with its subsystem, and recorders for delegates and run pins.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "GameSidecarModule.h"
#include "GameSidecarRunAction.h"
#include "GameSidecarSettings.h"
#include "GameSidecarSubsystem.h"
#include "Misc/Base64.h"
#include "Misc/Paths.h"
#include "Serialization/JsonSerializer.h"
#include "StandInControl.h"
#include "game_sidecar_c.h"

namespace PluginRun {
inline int Failures = 0;

inline bool Check(bool Ok, const char* What, const char* File, int Line) {
  if (!Ok) {
    std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", File, Line, What);
    ++Failures;
  }
  return Ok;
}
// Counts a failure and goes on; its value lets a case stop where going on makes no sense.
#define CHECK(cond) Check(static_cast<bool>(cond), #cond, __FILE__, __LINE__)

inline std::string Exe, Config, Temp;
inline ELogVerbosity::Type GLogPrintLevel = ELogVerbosity::Warning;

inline std::string Utf8(const FString& Text) { return FTCHARToUTF8(*Text).Get(); }
inline FString Str(const std::string& Text) { return FUTF8ToTCHAR(Text.c_str()).Get(); }

inline const char* StateName(ESidecarState State) {
  switch (State) {
    case ESidecarState::NotStarted: return "NotStarted";
    case ESidecarState::Starting: return "Starting";
    case ESidecarState::Ready: return "Ready";
    case ESidecarState::Stopped: return "Stopped";
    case ESidecarState::Failed: return "Failed";
    case ESidecarState::Restarting: return "Restarting";
  }
  return "?";
}

inline std::string StatesText(const std::vector<ESidecarState>& States) {
  std::string Out;
  for (ESidecarState S : States) Out += std::string(Out.empty() ? "" : ", ") + StateName(S);
  return "[" + Out + "]";
}

// True while the driver is inside a subsystem's Tick: every result must reach
// the game there, never inside the call that asked for it.
inline bool GInTick = false;

// One engine frame: each subsystem the tickable list would tick (Conditional:
// while IsTickable()), then the rest of the frame.
inline void Frame(const std::vector<UGameSidecarSubsystem*>& Subsystems) {
  for (UGameSidecarSubsystem* S : Subsystems) {
    if (S->IsTickable()) {
      GInTick = true;
      S->Tick(0.01f);
      GInTick = false;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// Frames until Done() holds, for at most Seconds.
inline bool TickUntil(const std::vector<UGameSidecarSubsystem*>& Subsystems, const std::function<bool()>& Done,
               double Seconds = 30) {
  const auto Deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(Seconds);
  while (!Done()) {
    if (std::chrono::steady_clock::now() > Deadline) return false;
    Frame(Subsystems);
  }
  return true;
}

// A few more frames, for what must NOT arrive (a second Stopped, a second OnFinished).
inline void Settle(const std::vector<UGameSidecarSubsystem*>& Subsystems, int Frames = 30) {
  for (int i = 0; i < Frames; ++i) Frame(Subsystems);
}

// The project settings for one case, from their defaults: the real sidecar, the
// scripted model, and StateFolder under the project's Saved folder.
inline UGameSidecarSettings* ResetSettings(const TCHAR* StateFolder) {
  UGameSidecarSettings* Settings = GetMutableDefault<UGameSidecarSettings>();
  *Settings = UGameSidecarSettings();
  Settings->Executable = Str(Exe);
  Settings->ConfigFile = Str(Config);
  Settings->StateFolder = StateFolder;
  Settings->bLaunchOnStart = true;
  return Settings;
}

// One game instance with its GameSidecar subsystem, made as the engine makes it
// (ShouldCreateSubsystem on the class default, NewObject, Initialize), with
// what its delegates said; ended (Deinitialize) at the latest when it goes.
struct FGame {
  UGameInstance* Instance = nullptr;
  UGameSidecarSubsystem* Sidecar = nullptr;
  std::vector<ESidecarState> States;
  std::vector<FSidecarStatus> StateStatuses;
  std::vector<FSidecarExit> Exits;
  std::vector<std::string> Events;  // "exit" and the state names, in order
  int LogLines = 0;
  int OutsideTick = 0;  // delegates that fired outside a Tick
  bool bInitialized = false;

  FGame() {
    Instance = StandIn::NewGameInstance();
    if (!CHECK(GetDefault<UGameSidecarSubsystem>()->ShouldCreateSubsystem(Instance))) return;
    Sidecar = NewObject<UGameSidecarSubsystem>(Instance);
    StandIn::AddSubsystem(Instance, Sidecar);
    // Listening before Initialize: a launch on start announces Starting inside it.
    Sidecar->OnStateChanged.StandInAddLambda([this](ESidecarState State, const FSidecarStatus& Status) {
      States.push_back(State);
      StateStatuses.push_back(Status);
      Events.push_back(StateName(State));
    });
    Sidecar->OnExited.StandInAddLambda([this](const FSidecarExit& Exit) {
      Exits.push_back(Exit);
      Events.push_back("exit");
      OutsideTick += GInTick ? 0 : 1;
    });
    Sidecar->OnLog.StandInAddLambda([this](const FString&) {
      ++LogLines;
      OutsideTick += GInTick ? 0 : 1;
    });
    FSubsystemCollectionBase Collection;
    Sidecar->Initialize(Collection);
    bInitialized = true;
  }
  FGame(const FGame&) = delete;
  FGame& operator=(const FGame&) = delete;
  ~FGame() { Deinitialize(); }

  void Deinitialize() {
    if (bInitialized) {
      Sidecar->Deinitialize();
      bInitialized = false;
    }
  }
  bool TickUntilReady(double Seconds = 30) {
    TickUntil({Sidecar}, [this] { return Sidecar->GetState() != ESidecarState::Starting; }, Seconds);
    if (Sidecar->GetState() != ESidecarState::Ready) {
      const FSidecarStatus Last = StateStatuses.empty() ? FSidecarStatus() : StateStatuses.back();
      std::fprintf(stderr, "not ready: %s %s %s\n", StateName(Sidecar->GetState()), Utf8(Last.Reason).c_str(),
                   Utf8(Last.Message).c_str());
    }
    return CHECK(Sidecar->GetState() == ESidecarState::Ready);
  }
};

// What one FSidecarCallDone delegate was called with.
struct FCallLog {
  int Calls = 0;
  int OutsideTick = 0;
  FSidecarStatus Status;
  int64 Revision = -2;
};

inline FSidecarCallDone Recorder(FCallLog& Log) {
  FSidecarCallDone Done;
  Done.StandInBindLambda([&Log](const FSidecarStatus& Status, int64 Revision) {
    ++Log.Calls;
    Log.OutsideTick += GInTick ? 0 : 1;
    Log.Status = Status;
    Log.Revision = Revision;
  });
  return Done;
}

// What one run node's pins fired.
struct FRunLog {
  std::vector<FString> Texts, Sentences;
  int Finished = 0, Errors = 0, OutsideTick = 0;
  FString FinishedText;
  FSidecarRunEvent Last;

  void Listen(USidecarRunAction* Action) {
    Action->OnText.StandInAddLambda([this](const FString& Text, const FSidecarRunEvent&) {
      Texts.push_back(Text);
      OutsideTick += GInTick ? 0 : 1;
    });
    Action->OnSentence.StandInAddLambda([this](const FString& Text, const FSidecarRunEvent&) { Sentences.push_back(Text); });
    Action->OnFinished.StandInAddLambda([this](const FString& Text, const FSidecarRunEvent& Event) {
      ++Finished;
      FinishedText = Text;
      Last = Event;
      OutsideTick += GInTick ? 0 : 1;
    });
    Action->OnError.StandInAddLambda([this](const FString&, const FSidecarRunEvent& Event) {
      ++Errors;
      Last = Event;
      OutsideTick += GInTick ? 0 : 1;
    });
  }
  FString Joined() const {
    FString All;
    for (const FString& T : Texts) All += T;
    return All;
  }
};

// Case-sensitive, unlike FString's == (which ignores case, as Unreal's does).
inline bool SameTexts(const std::vector<FString>& A, const std::vector<FString>& B) {
  if (A.size() != B.size()) return false;
  for (size_t i = 0; i < A.size(); ++i) if (!A[i].Equals(B[i])) return false;
  return true;
}

inline bool ProcessExists(int Pid) { return kill(Pid, 0) == 0; }

struct FCase {
  const char* Name;
  void (*Run)();
};
// The cases of plugin_run_blueprint.cpp.
extern const FCase BlueprintCases[];
extern const size_t BlueprintCaseCount;

}  // namespace PluginRun
