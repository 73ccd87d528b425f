// The GameSidecar plugin's own C++ (Private/*.cpp), RUN against the stand-in
// engine (clients/unreal/stand-in) and the real sidecar with the scripted model
// (clients/cpp/tests/sidecar_test.toml). This program plays the engine: it makes
// game instances and their subsystem, ticks them every ~10 ms as the engine's
// tickable list would, and ends them. It proves the plugin's logic, not that it
// builds or behaves the same inside Unreal.
//
//   plugin_run_test <game-sidecar> <sidecar_test.toml>
//
// scripts/test_unreal.sh builds and runs it ("the plugin's logic, run against the
// stand-ins and the real sidecar"). PLUGIN_RUN_VERBOSE=1 prints every UE_LOG
// line (the sidecar's own log included), not only warnings and errors.
#include "run_support.h"

using namespace PluginRun;

namespace {
// The stand-ins' own conversions the plugin leans on: a fault here would pass
// for the plugin's.
void StandIns() {
  const char* Mixed = "h\xc3\xa9llo \xf0\x9f\x98\x80 x";  // é: 2 bytes, 1 unit; 😀: 4 bytes, 2 units
  const FString Text = Str(Mixed);
  CHECK(Text.Len() == 10 && (*Text)[6] == 0xD83D && Utf8(Text) == Mixed);
  CHECK(Utf8(Str("\xff!")) == "\xef\xbf\xbd!");  // a bad byte: U+FFFD
  CHECK(FString::Printf(TEXT("%s|%d|%04x|%lld|%llu|%u|%.2f|%-3s|"), TEXT("a"), -7, 31, static_cast<int64>(-1099511627776LL),
                        static_cast<uint64>(1) << 63, 4000000000u, 0.5, TEXT("b"))
            .Equals(TEXT("a|-7|001f|-1099511627776|9223372036854775808|4000000000|0.50|b  |")));
  CHECK(FString(TEXT("Abc")) == TEXT("aBC") && !FString(TEXT("Abc")).Equals(TEXT("aBC")));  // == ignores case
  CHECK(FString(TEXT(" \t x y \n")).TrimStartAndEnd().Equals(TEXT("x y")));
  CHECK((FString(TEXT("/a/")) / TEXT("b")).Equals(TEXT("/a/b")) && (FString(TEXT("/a")) / TEXT("b")).Equals(TEXT("/a/b")));
  CHECK(FPaths::ConvertRelativePathToFull(TEXT("/a/./b//../c/")).Equals(TEXT("/a/c/")));
  CHECK(FPaths::IsRelative(TEXT("a/b")) && !FPaths::IsRelative(TEXT("/a")) && !FPaths::IsRelative(TEXT("C:/a")));
  // ToExit reads the EXIT event's JSON through the stand-ins' reader.
  const FSidecarExit Exit = UGameSidecarSubsystem::ToExit(
      TEXT("{\"exitCode\": null, \"signal\": 9, \"requested\": false, \"hung\": true, \"pid\": 4242, ")
      TEXT("\"x\": [1, {\"y\": []}], \"stderrTail\": \"a\\n\\\"b\\\" \\u00e9\\ud83d\\ude00\", \"description\": \"killed\"}"));
  CHECK(!Exit.bHasExitCode && Exit.bHasSignal && Exit.Signal == 9 && !Exit.bRequested && Exit.bHung && Exit.Pid == 4242);
  CHECK(Utf8(Exit.StderrTail) == "a\n\"b\" \xc3\xa9\xf0\x9f\x98\x80" && Exit.Description.Equals(TEXT("killed")));
  CHECK(UGameSidecarSubsystem::ToExit(TEXT("{\"pid\": 1,}")).Description.Equals(TEXT("{\"pid\": 1,}")));  // bad JSON: kept whole
  TArray<uint8> Bytes = {0, 0xff, 'a', 'b'}, Back;
  CHECK(FBase64::Encode(Bytes).Equals(TEXT("AP9hYg==")) && FBase64::Decode(TEXT("AP9hYg=="), Back) && Back == Bytes);
  CHECK(!FBase64::Decode(TEXT("AP9h*g=="), Back) && Back.IsEmpty());
  // Nested values, and proto3's int64-as-string, as Unreal's reader gives them.
  TSharedPtr<FJsonObject> Object;
  const FString Nested = TEXT("{\"a\": {\"revision\": \"9007199254740993\", \"ids\": [\"x\", 2]}}");
  CHECK(FJsonSerializer::Deserialize(TJsonReaderFactory<>::Create(Nested), Object) && Object.IsValid());
  const TSharedPtr<FJsonObject>* Inner = nullptr;
  const TArray<TSharedPtr<FJsonValue>>* Ids = nullptr;
  int64 Revision = 0;
  if (CHECK(Object.IsValid() && Object->TryGetObjectField(TEXT("a"), Inner))) {
    CHECK((*Inner)->TryGetNumberField(TEXT("revision"), Revision) && Revision == 9007199254740993LL);
    CHECK((*Inner)->TryGetArrayField(TEXT("ids"), Ids) && Ids->Num() == 2 && (*Ids)[0]->AsString().Equals(TEXT("x")) &&
          (*Ids)[1]->AsString().Equals(TEXT("2")));
    CHECK(!(*Inner)->TryGetObjectField(TEXT("ids"), Inner));
  }
}

// (a) Launch on start, Ready, Stop(): each state announced once, in order.
void LaunchReadyStop() {
  ResetSettings(TEXT("state-a"));
  FGame Game;
  if (!CHECK(Game.bInitialized)) return;
  CHECK(Game.States == std::vector<ESidecarState>{ESidecarState::Starting});  // inside Initialize, by Launch
  if (!Game.TickUntilReady()) return;
  const int32 Pid = Game.Sidecar->GetSidecarPid();
  CHECK(Pid > 0 && ProcessExists(Pid));
  CHECK(Game.Sidecar->StateFolder.Equals(Str(Temp + "/Project/Saved/state-a")));
  Game.Sidecar->Launch();  // a no-op while Ready
  Game.Sidecar->Stop();
  CHECK(Game.Sidecar->GetState() == ESidecarState::Ready);  // Stop() does not wait
  CHECK(TickUntil({Game.Sidecar}, [&Game] { return Game.Sidecar->GetState() == ESidecarState::Stopped && !Game.Exits.empty(); }));
  Settle({Game.Sidecar});
  if (!CHECK((Game.States == std::vector<ESidecarState>{ESidecarState::Starting, ESidecarState::Ready, ESidecarState::Stopped}))) {
    std::fprintf(stderr, "  OnStateChanged saw %s\n", StatesText(Game.States).c_str());
  }
  // The stop's process exit, through OnExited (the stand-in's JSON reader parsed it).
  if (CHECK(Game.Exits.size() == 1)) {
    const FSidecarExit& Exit = Game.Exits[0];
    CHECK(Exit.bRequested && !Exit.bHung && Exit.Pid == Pid);
    CHECK(Exit.bHasExitCode && Exit.ExitCode == 0 && !Exit.bHasSignal);
    CHECK(!Exit.Description.IsEmpty());
  }
  // OnExited comes before the state change the exit causes (GameSidecarSubsystem.h).
  CHECK((Game.Events == std::vector<std::string>{"Starting", "Ready", "exit", "Stopped"}));
  CHECK(Game.LogLines > 0 && Game.OutsideTick == 0);
  CHECK(Game.Sidecar->GetSidecarPid() == 0);
  Game.Deinitialize();
  CHECK(!Game.Sidecar->IsTickable());
  // A call after Deinitialize is refused, on a later tick like any result.
  FCallLog Late;
  Game.Sidecar->OpenSession(TEXT("late"), Recorder(Late));
  CHECK(Late.Calls == 0 && Game.Sidecar->IsTickable());
  Frame({Game.Sidecar});
  CHECK(Late.Calls == 1 && Late.OutsideTick == 0 && Late.Status.Code == GAME_SIDECAR_FAILED_PRECONDITION);
  CHECK(Late.Status.Reason.Equals(TEXT("LIBRARY_NOT_LOADED")));
  CHECK(!Game.Sidecar->IsTickable());
}

// (b) Session calls and delta batches answer on later ticks, each to its own delegate.
void SessionAndDeltas() {
  ResetSettings(TEXT("state-b"));
  FGame Game;
  if (!CHECK(Game.bInitialized)) return;
  // Queued behind the launch, without waiting for Ready.
  FCallLog Opened, Applied, Bad;
  Game.Sidecar->OpenSession(TEXT("ue-slot"), Recorder(Opened));
  FSidecarDeltaBatch Batch;
  FSidecarEntity Guard;
  Guard.Id = TEXT("guard");
  Guard.Kind = ESidecarEntityKind::Character;
  Guard.Name = TEXT("Guard");
  Guard.Description = TEXT("a tired guard");
  Batch.Upserts.Add(Guard);
  Game.Sidecar->ApplyDeltas(TEXT("ue-slot"), Batch, Recorder(Applied));
  FSidecarDeltaBatch BadBatch;
  FSidecarEntity Nameless;
  Nameless.Name = TEXT("Nobody");
  BadBatch.Upserts.Add(Nameless);
  Game.Sidecar->ApplyDeltas(TEXT("ue-slot"), BadBatch, Recorder(Bad));
  CHECK(Opened.Calls == 0 && Applied.Calls == 0 && Bad.Calls == 0);
  CHECK(TickUntil({Game.Sidecar}, [&] { return Opened.Calls > 0 && Applied.Calls > 0 && Bad.Calls > 0; }));
  Settle({Game.Sidecar}, 5);
  CHECK(Opened.Calls == 1 && Applied.Calls == 1 && Bad.Calls == 1);
  CHECK(Opened.OutsideTick == 0 && Applied.OutsideTick == 0 && Bad.OutsideTick == 0);
  CHECK(Opened.Status.IsOk() && Opened.Revision == 0);
  CHECK(Applied.Status.IsOk() && Applied.Revision == 1);
  CHECK(Bad.Status.Code == GAME_SIDECAR_INVALID_ARGUMENT && Bad.Revision == -1);
  CHECK(Bad.Status.Reason.Equals(TEXT("INVALID_REQUEST")) && Bad.Status.Message.Contains(TEXT("empty ID")));

  int GotState = 0;
  FSidecarStatus StateStatus;
  FString StateJson;
  int64 StateRevision = -2;
  Game.Sidecar->CallJson(TEXT("GetState"), TEXT("{\"sessionId\": \"ue-slot\"}"),
                         [&](const FSidecarStatus& Status, const FString& Json, int64 Revision) {
                           ++GotState;
                           StateStatus = Status;
                           StateJson = Json;
                           StateRevision = Revision;
                         });
  CHECK(GotState == 0);
  CHECK(TickUntil({Game.Sidecar}, [&] { return GotState > 0; }));
  CHECK(GotState == 1 && StateStatus.IsOk() && StateRevision == 1);
  if (!CHECK(StateJson.Contains(TEXT("\"guard\""), ESearchCase::CaseSensitive) &&
             StateJson.Contains(TEXT("a tired guard"), ESearchCase::CaseSensitive))) {
    std::fprintf(stderr, "  GetState: %s\n", Utf8(StateJson).c_str());
  }
}

// (c) A Narrate node: its pins with the scripted reply; and a cancelled one.
void NarrateNode() {
  ResetSettings(TEXT("state-c"));
  FGame Game;
  if (!CHECK(Game.bInitialized) || !Game.TickUntilReady()) return;
  FCallLog Opened;
  Game.Sidecar->OpenSession(TEXT("ue-slot"), Recorder(Opened));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Opened.Calls > 0; }));
  CHECK(Opened.Status.IsOk());

  const FString Reply = TEXT("The gate creaks open. A cold wind rushes in! Nobody speaks.");
  FRunLog Run;
  USidecarRunAction* Action =
      USidecarRunAction::Narrate(Game.Instance, TEXT("ue-slot"), TEXT("The gate opens."), FString(), {}, {}, FString());
  if (!CHECK(Action != nullptr)) return;
  CHECK(StandIn::IsReferenced(Game.Instance, Action));  // kept alive by the game instance while it runs
  Run.Listen(Action);
  Action->Activate();
  CHECK(Run.Texts.empty() && Run.Finished == 0 && Run.Errors == 0);
  CHECK(TickUntil({Game.Sidecar}, [&Run] { return Run.Finished + Run.Errors > 0; }));
  Settle({Game.Sidecar});
  CHECK(Run.Errors == 0 && Run.Finished == 1 && Run.OutsideTick == 0);
  CHECK(Run.FinishedText.Equals(Reply) && Run.Joined().Equals(Reply) && Run.Texts.size() > 3);
  if (!CHECK(SameTexts(Run.Sentences, {TEXT("The gate creaks open."), TEXT("A cold wind rushes in!"), TEXT("Nobody speaks.")}))) {
    for (const FString& S : Run.Sentences) std::fprintf(stderr, "  sentence: [%s]\n", Utf8(S).c_str());
  }
  CHECK(Run.Last.RunId.StartsWith(TEXT("run-")));
  CHECK(!StandIn::IsReferenced(Game.Instance, Action));  // SetReadyToDestroy

  // Cancel() from inside the first OnText (as capi's test cancels from its
  // callback), of a run on the config's slow profile (a short sentence every 40 ms).
  FRunLog Cancelled;
  USidecarRunAction* Slow =
      USidecarRunAction::Narrate(Game.Instance, TEXT("ue-slot"), TEXT("The gate opens."), FString(), {}, {}, TEXT("slow"));
  Cancelled.Listen(Slow);
  Slow->OnText.StandInAddLambda([Slow, &Cancelled](const FString&, const FSidecarRunEvent&) {
    if (Cancelled.Texts.size() == 1) Slow->Cancel();
  });
  Slow->Activate();
  CHECK(TickUntil({Game.Sidecar}, [&Cancelled] { return Cancelled.Finished + Cancelled.Errors > 0; }));
  Settle({Game.Sidecar});
  CHECK(Cancelled.Finished == 0 && Cancelled.Errors == 1 && !Cancelled.Texts.empty());
  CHECK(Cancelled.Last.Status.Code == GAME_SIDECAR_CANCELLED && Cancelled.Last.Status.Reason.Equals(TEXT("RUN_CANCELLED")));
  CHECK(Cancelled.Joined().Len() < FString(TEXT("One. Two. Three. Four. Five. Six. Seven. Eight. Nine. Ten.")).Len());
  CHECK(!StandIn::IsReferenced(Game.Instance, Slow));
}

// (d) Deinitialize with a hung sidecar returns at once; the library finishes the stop.
void DeinitializeHung() {
  ResetSettings(TEXT("state-d"));
  FGame Game;
  if (!CHECK(Game.bInitialized) || !Game.TickUntilReady()) return;
  const int32 Pid = Game.Sidecar->GetSidecarPid();
  if (!CHECK(Pid > 0)) return;
  CHECK(game_sidecar_wait_released(0) == 0);
  CHECK(kill(Pid, SIGSTOP) == 0);  // hung: deaf to stdin's end and to SIGTERM
  const auto Start = std::chrono::steady_clock::now();
  Game.Deinitialize();
  const double Took = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  CHECK(ProcessExists(Pid));  // returned with the stop still to do
  if (!CHECK(Took < 1.0)) std::fprintf(stderr, "  Deinitialize took %.2f s\n", Took);
  CHECK(game_sidecar_wait_released(0) == 1);
  CHECK(game_sidecar_wait_released(30000) == 0);
  CHECK(!ProcessExists(Pid) && errno == ESRCH);  // killed and reaped
}

// (e) Two game instances of one project: the second takes <StateFolder>-2.
void SecondInstanceTakesNextFolder() {
  UGameSidecarSettings* Settings = ResetSettings(TEXT("shared"));
  const FString Base = Str(Temp + "/Project/Saved/shared");
  {
    FGame First;
    if (!CHECK(First.bInitialized) || !First.TickUntilReady()) return;
    FGame Second;
    if (!CHECK(Second.bInitialized) || !Second.TickUntilReady()) return;
    CHECK(First.Sidecar->StateFolder.Equals(Base));
    if (!CHECK(Second.Sidecar->StateFolder.EndsWith(TEXT("-2")) && Second.Sidecar->StateFolder.Equals(Base + TEXT("-2")))) {
      std::fprintf(stderr, "  second StateFolder: %s\n", Utf8(Second.Sidecar->StateFolder).c_str());
    }
    CHECK((Second.States == std::vector<ESidecarState>{ESidecarState::Starting, ESidecarState::Ready}));
    CHECK(First.Sidecar->GetSidecarPid() != Second.Sidecar->GetSidecarPid());
    // Without the setting, a third is refused the folder.
    Settings->bNextStateFolderWhenLocked = false;
    int LockedErrors = 0;
    StandIn::SetLogPrintLevel(ELogVerbosity::NoLogging);  // the error below is expected: counted, not printed
    StandIn::SetLogHook([&LockedErrors](const char*, ELogVerbosity::Type Verbosity, const FString& Text) {
      LockedErrors += Verbosity == ELogVerbosity::Error && Text.Contains(TEXT("launch failed: STATE_DIR_LOCKED")) ? 1 : 0;
    });
    FGame Third;
    TickUntil({Third.Sidecar}, [&Third] { return Third.Sidecar->GetState() != ESidecarState::Starting; });
    StandIn::SetLogHook(nullptr);
    StandIn::SetLogPrintLevel(GLogPrintLevel);
    CHECK(LockedErrors == 1);
    CHECK(Third.Sidecar->GetState() == ESidecarState::Failed && Third.Sidecar->StateFolder.Equals(Base));
    CHECK(!Third.StateStatuses.empty() && Third.StateStatuses.back().Reason.Equals(TEXT("STATE_DIR_LOCKED")));
  }
  CHECK(game_sidecar_wait_released(30000) == 0);
}

// (f) An executable that lost its executable bit (staged through a zip) still launches.
void RestoresExecutableBit() {
  const std::string Copy = Temp + "/bin/game-sidecar";
  std::filesystem::create_directories(Temp + "/bin");
  std::filesystem::copy_file(Exe, Copy);
  // The frozen sidecar (scripts/package's onedir build, what scripts/test runs) finds
  // its libraries in _internal beside the executable: the copy gets a link to them.
  const std::filesystem::path Internal = std::filesystem::path(Exe).parent_path() / "_internal";
  if (std::filesystem::is_directory(Internal)) std::filesystem::create_directory_symlink(Internal, Temp + "/bin/_internal");
  chmod(Copy.c_str(), 0644);
  UGameSidecarSettings* Settings = ResetSettings(TEXT("state-f"));
  Settings->Executable = Str(Copy);
  int Restored = 0;
  StandIn::SetLogHook([&Restored](const char*, ELogVerbosity::Type, const FString& Text) {
    Restored += Text.Contains(TEXT("restored the executable bit")) ? 1 : 0;
  });
  {
    FGame Game;
    CHECK(Game.bInitialized && Game.TickUntilReady());
  }
  StandIn::SetLogHook(nullptr);
  struct stat Info;
  CHECK(stat(Copy.c_str(), &Info) == 0 && (Info.st_mode & 0777) == 0755);
  CHECK(Restored == 1);
  CHECK(game_sidecar_wait_released(30000) == 0);
}

// (g) RunsOn decides, on the class default object, which game instances get a subsystem.
void RunsOn() {
  UGameSidecarSettings* Settings = ResetSettings(TEXT("state-g"));
  const UGameSidecarSubsystem* Default = GetDefault<UGameSidecarSubsystem>();
  UGameInstance* Game = StandIn::NewGameInstance();
  // PIE's "run under one process" dedicated server: a game instance of the editor.
  UGameInstance* PIEServer = StandIn::NewGameInstance(EWorldType::PIE, 0, /*bRunAsDedicated=*/true);
  for (const bool bDedicatedProcess : {false, true}) {
    StandIn::SetRunningDedicatedServer(bDedicatedProcess);
    Settings->RunsOn = ESidecarRunsOn::DedicatedServersOnly;
    CHECK(Default->ShouldCreateSubsystem(Game) == bDedicatedProcess);
    CHECK(Default->ShouldCreateSubsystem(PIEServer));
    Settings->RunsOn = ESidecarRunsOn::AllButDedicatedServers;
    CHECK(Default->ShouldCreateSubsystem(Game) == !bDedicatedProcess);
    CHECK(!Default->ShouldCreateSubsystem(PIEServer));
    Settings->RunsOn = ESidecarRunsOn::Everywhere;
    CHECK(Default->ShouldCreateSubsystem(Game) && Default->ShouldCreateSubsystem(PIEServer));
  }
  StandIn::SetRunningDedicatedServer(false);
}

}  // namespace

extern "C" IModuleInterface* InitializeModule_GameSidecar();

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <game-sidecar> <sidecar_test.toml>\n", argv[0]);
    return 2;
  }
  Exe = std::filesystem::absolute(argv[1]).string();  // a relative Executable would be the project's
  Config = std::filesystem::absolute(argv[2]).string();
  char Pattern[] = "/tmp/plugin-run-XXXXXX";
  if (mkdtemp(Pattern) == nullptr) return 2;
  Temp = Pattern;
  StandIn::SetProjectDir(Str(Temp + "/Project"));
  const char* Verbose = std::getenv("PLUGIN_RUN_VERBOSE");
  if (Verbose && *Verbose && *Verbose != '0') GLogPrintLevel = ELogVerbosity::All;
  StandIn::SetLogPrintLevel(GLogPrintLevel);

  // The engine loads the module before any game instance starts, and unloads it last.
  IModuleInterface* Module = InitializeModule_GameSidecar();
  Module->StartupModule();
  CHECK(FGameSidecarModule::IsLibraryLoaded());
  const FCase Cases[] = {
      {"0. the stand-ins' conversions", StandIns},
      {"a. launch, ready, stop", LaunchReadyStop},
      {"b. session and deltas", SessionAndDeltas},
      {"c. Narrate node and cancel", NarrateNode},
      {"d. Deinitialize with a hung sidecar", DeinitializeHung},
      {"e. a second instance takes <StateFolder>-2", SecondInstanceTakesNextFolder},
      {"f. the executable bit restored", RestoresExecutableBit},
      {"g. RunsOn", RunsOn},
  };
  std::vector<FCase> All(std::begin(Cases), std::end(Cases));
  All.insert(All.end(), BlueprintCases, BlueprintCases + BlueprintCaseCount);
  for (const FCase& Case : All) {
    const int Before = Failures;
    const auto Start = std::chrono::steady_clock::now();
    Case.Run();
    const double Took = std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
    std::printf("   %s %s (%.1f s)\n", Failures == Before ? "ok" : "FAILED", Case.Name, Took);
    std::fflush(stdout);
  }
  Module->ShutdownModule();
  CHECK(game_sidecar_wait_released(0) == 0);
  delete Module;
  std::filesystem::remove_all(Temp);
  if (Failures > 0) {
    std::fprintf(stderr, "plugin_run_test: %d check(s) failed\n", Failures);
    return 1;
  }
  std::printf("   plugin_run_test: all checks passed\n");
  return 0;
}
