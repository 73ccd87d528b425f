// The Blueprint side of the plugin, run (see plugin_run_test.cpp): the Decide node,
// Continue and Describe, sentences with their mentions, tracked writes through a
// crash, save games, the typed voice ops, and calls held while a launch is retried.
#include "GameSidecarDecideAction.h"
#include "GameSidecarSettings.h"
#include "run_support.h"

namespace PluginRun {
namespace {

FString Sub(const FString& Text, int32 Start, int32 Length) { return FString(Length, *Text + Start); }

FSidecarEntity Character(const TCHAR* Id, const TCHAR* Name) {
  FSidecarEntity E;
  E.Id = Id;
  E.Kind = ESidecarEntityKind::Character;
  E.Name = Name;
  E.Description = TEXT("a tired guard");
  return E;
}

// A game Ready with session "bp-slot" open (tracked) and a guard in it.
bool OpenWithGuard(FGame& Game, const TCHAR* Session = TEXT("bp-slot")) {
  if (!CHECK(Game.bInitialized) || !Game.TickUntilReady()) return false;
  FCallLog Opened, Applied;
  Game.Sidecar->OpenSession(Session, Recorder(Opened));
  FSidecarDeltaBatch Batch;
  Batch.Upserts.Add(Character(TEXT("guard"), TEXT("Guard")));
  Game.Sidecar->ApplyDeltas(Session, Batch, Recorder(Applied));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Applied.Calls > 0; }));
  return CHECK(Opened.Status.IsOk() && Applied.Status.IsOk() && Applied.Revision == 1);
}

// What a Decide node's pins fired.
struct FDecideLog {
  int Decided = 0, Rejected = 0, Errors = 0;
  FString Line;
  FSidecarRunEvent Last;
  void Listen(USidecarDecideAction* Action) {
    Action->OnDecided.StandInAddLambda([this](const FString& Text, const FSidecarRunEvent& Event) {
      ++Decided;
      Line = Text;
      Last = Event;
    });
    Action->OnAttemptRejected.StandInAddLambda([this](const FString&, const FSidecarRunEvent& Event) {
      ++Rejected;
      CHECK(Event.Attempt == Rejected && !Event.Status.Message.IsEmpty());
    });
    Action->OnError.StandInAddLambda([this](const FString&, const FSidecarRunEvent& Event) {
      ++Errors;
      Last = Event;
    });
  }
};

// (h) Decide: the choice, never the raw reply; refused replies are events of their own.
void DecideNode() {
  ResetSettings(TEXT("state-h"));
  FGame Game;
  if (!OpenWithGuard(Game)) return;
  FSidecarActionOption Wave, Block;
  Wave.ActionId = TEXT("ACT_WAVE");
  Wave.Label = TEXT("Wave the player through");
  Block.ActionId = TEXT("ACT_BLOCK");
  Block.Label = TEXT("Block the gate");
  FDecideLog Chose;
  USidecarDecideAction* Action = USidecarDecideAction::Decide(Game.Instance, TEXT("bp-slot"), TEXT("guard"),
                                                              TEXT("The player approaches. #choose:2"), {Wave, Block}, {},
                                                              FString(), 0);
  Chose.Listen(Action);
  Action->Activate();
  CHECK(TickUntil({Game.Sidecar}, [&] { return Chose.Decided + Chose.Errors > 0; }));
  Settle({Game.Sidecar});
  if (CHECK(Chose.Decided == 1 && Chose.Errors == 0)) {
    const FSidecarDecision& D = Chose.Last.Decision;
    CHECK(D.ActionId.Equals(TEXT("ACT_BLOCK")) && D.Index == 1 && Chose.Last.ActionId.Equals(TEXT("ACT_BLOCK")));
    CHECK(D.Line.Equals(TEXT("So be it.")) && Chose.Line.Equals(D.Line));
    CHECK(!Chose.Line.Contains(TEXT("{")));  // the reply's JSON never reaches a pin
  }
  CHECK(Chose.Rejected == 0 && !StandIn::IsReferenced(Game.Instance, Action));

  // A reply with no valid choice, every attempt: each refusal, then INVALID_CHOICE.
  FDecideLog Garbage;
  USidecarDecideAction* Bad = USidecarDecideAction::Decide(Game.Instance, TEXT("bp-slot"), TEXT("guard"),
                                                           TEXT("The player waits. #garbage"), {Wave, Block}, {},
                                                           FString(), 2);
  Garbage.Listen(Bad);
  Bad->Activate();
  CHECK(TickUntil({Game.Sidecar}, [&] { return Garbage.Decided + Garbage.Errors > 0; }));
  CHECK(Garbage.Decided == 0 && Garbage.Errors == 1 && Garbage.Rejected >= 1);
  if (!CHECK(Garbage.Last.Status.Reason.Equals(TEXT("INVALID_CHOICE")))) {
    std::fprintf(stderr, "  decide error: %s %s\n", Utf8(Garbage.Last.Status.Reason).c_str(), Utf8(Garbage.Last.Status.Message).c_str());
  }
}

// (i) Continue and Describe, and (j) sentences that carry their own mentions.
void TextNodesAndMentions() {
  ResetSettings(TEXT("state-i"));
  FGame Game;
  if (!OpenWithGuard(Game)) return;
  const FString Reply = TEXT("The gate creaks open. A cold wind rushes in! Nobody speaks.");
  FRunLog Described, Continued;
  // The guard describes itself: its reply is then one Continue can carry on.
  USidecarRunAction* Describe =
      USidecarRunAction::Describe(Game.Instance, TEXT("bp-slot"), TEXT("guard"), TEXT("guard"), TEXT("appearance"), {}, FString());
  Described.Listen(Describe);
  Describe->Activate();
  CHECK(TickUntil({Game.Sidecar}, [&] { return Described.Finished + Described.Errors > 0; }));
  CHECK(Described.Finished == 1 && Described.FinishedText.Equals(Reply));
  USidecarRunAction* Continue = USidecarRunAction::Continue(Game.Instance, TEXT("bp-slot"), TEXT("guard"), {}, FString());
  Continued.Listen(Continue);
  Continue->Activate();
  CHECK(TickUntil({Game.Sidecar}, [&] { return Continued.Finished + Continued.Errors > 0; }));
  if (!CHECK(Continued.Finished == 1 && Continued.FinishedText.Equals(Reply))) {
    std::fprintf(stderr, "  continue: %s\n", Utf8(Continued.Last.Status.Message).c_str());
  }

  // #echo: the model answers with its prompt's last message, where the input's
  // engine ID stood as the alias; the text shows the display name, and each pin's
  // mentions point at it.
  FCallLog Added;
  FSidecarDeltaBatch Sentry;
  Sentry.Upserts.Add(Character(TEXT("BP_Sentry_C_7"), TEXT("Sentry")));
  Game.Sidecar->ApplyDeltas(TEXT("bp-slot"), Sentry, Recorder(Added));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Added.Calls > 0; }) && Added.Status.IsOk());
  FRunLog Echo;
  std::vector<std::pair<FString, FSidecarRunEvent>> Sentences;
  USidecarRunAction* Narrate = USidecarRunAction::Narrate(Game.Instance, TEXT("bp-slot"),
                                                          TEXT("BP_Sentry_C_7 yawns. Then BP_Sentry_C_7 sleeps. #echo"),
                                                          FString(), {TEXT("BP_Sentry_C_7")}, {}, FString());
  Echo.Listen(Narrate);
  Narrate->OnSentence.StandInAddLambda(
      [&Sentences](const FString& Text, const FSidecarRunEvent& Event) { Sentences.emplace_back(Text, Event); });
  Narrate->Activate();
  CHECK(TickUntil({Game.Sidecar}, [&] { return Echo.Finished + Echo.Errors > 0; }));
  CHECK(Echo.Finished == 1);
  int InSentences = 0;
  for (const auto& [Text, Event] : Sentences) {
    for (const FSidecarMention& M : Event.Mentions) {
      ++InSentences;
      CHECK(M.EntityId.Equals(TEXT("BP_Sentry_C_7")) && M.Start >= 0 && M.Start + M.Length <= Text.Len());
      if (!CHECK(Sub(Text, M.Start, M.Length).Equals(TEXT("Sentry")))) {
        std::fprintf(stderr, "  sentence [%s] mention at %d+%d\n", Utf8(Text).c_str(), M.Start, M.Length);
      }
    }
  }
  int InWhole = 0;
  for (const FSidecarMention& M : Echo.Last.Mentions) {
    ++InWhole;
    CHECK(Sub(Echo.FinishedText, M.Start, M.Length).Equals(TEXT("Sentry")));
  }
  if (!CHECK(InSentences > 0 && InWhole == InSentences)) {
    std::fprintf(stderr, "  echo: [%s], %d sentence mentions, %d in the whole\n", Utf8(Echo.FinishedText).c_str(),
                 InSentences, InWhole);
  }
}

// (k) Tracked writes through a crash: no revision to carry; a write made while the
// sidecar restarts is kept, sent once it is back, and reported.
void TrackedWritesThroughACrash() {
  UGameSidecarSettings* Settings = ResetSettings(TEXT("state-k"));
  Settings->MaxRestarts = 2;
  Settings->RestartBackoffInitialMs = 50;
  FGame Game;
  if (!OpenWithGuard(Game, TEXT("k-slot"))) return;
  std::vector<FSidecarWritesSettled> Settled;
  Game.Sidecar->OnWriteSettled.StandInAddLambda([&Settled](const FSidecarWritesSettled& S) { Settled.push_back(S); });
  FSidecarDeltaBatch Mood;
  FSidecarFieldChange Wary;
  Wary.EntityId = TEXT("guard");
  Wary.Field = TEXT("mood");
  Wary.Value = TEXT("wary");
  Mood.FieldChanges.Add(Wary);
  FCallLog Second;
  Game.Sidecar->ApplyDeltas(TEXT("k-slot"), Mood, Recorder(Second));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Second.Calls > 0; }));
  CHECK(Second.Status.IsOk() && Second.Revision == 2 && Game.Sidecar->GetTrackedRevision(TEXT("k-slot")) == 2);

  CHECK(kill(Game.Sidecar->GetSidecarPid(), SIGKILL) == 0);
  CHECK(TickUntil({Game.Sidecar}, [&] { return Game.Sidecar->GetState() == ESidecarState::Restarting; }));
  FSidecarDeltaBatch During;
  FSidecarGameEvent Event;
  Event.Text = TEXT("The guard hears a crash.");
  During.Events.Add(Event);
  FCallLog Kept;
  Game.Sidecar->ApplyDeltas(TEXT("k-slot"), During, Recorder(Kept));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Kept.Calls > 0 && Game.Sidecar->GetState() == ESidecarState::Ready; }));
  if (Kept.Status.IsOk()) {
    CHECK(Kept.Revision == 3);  // the restart was quicker than the write
  } else if (CHECK(Kept.Status.Reason.Equals(TEXT("WRITE_KEPT")))) {
    CHECK(TickUntil({Game.Sidecar}, [&] { return !Settled.empty(); }));
    // Kept as the batch in flight (sent to the dead process) or as a held one: applied once, either way.
    if (CHECK(Settled.size() == 1 && Settled[0].bResumed && Settled[0].Writes.Num() == 1)) {
      CHECK(Settled[0].SessionId.Equals(TEXT("k-slot")) && Settled[0].Writes[0].Outcome == ESidecarWriteOutcome::AppliedNow);
      CHECK(Settled[0].Revision == 3 && Settled[0].Writes[0].Revision == 3 && !Settled[0].Writes[0].DeltaId.IsEmpty());
    }
  }
  CHECK(Game.Sidecar->GetTrackedRevision(TEXT("k-slot")) == 3);
  int Got = 0;
  FString Json;
  FSidecarJsonDone OnState;
  OnState.StandInBindLambda([&](const FSidecarStatus& Status, const FString& State, int64 Revision) {
    ++Got;
    CHECK(Status.IsOk() && Revision == 3);
    Json = State;
  });
  Game.Sidecar->GetState(TEXT("k-slot"), OnState);
  CHECK(TickUntil({Game.Sidecar}, [&] { return Got > 0; }));
  CHECK(Json.Contains(TEXT("The guard hears a crash."), ESearchCase::CaseSensitive) &&
        Json.Contains(TEXT("wary"), ESearchCase::CaseSensitive));
}

// (l) A save game: ExportSession's bytes, ImportSession back, and the tracked
// revision follows the import.
void SaveGame() {
  ResetSettings(TEXT("state-l"));
  FGame Game;
  if (!OpenWithGuard(Game, TEXT("l-slot"))) return;
  TArray<uint8> Saved;
  int Exported = 0;
  FSidecarExportDone OnExported;
  OnExported.StandInBindLambda([&](const FSidecarStatus& Status, const TArray<uint8>& Data, int64 Revision) {
    ++Exported;
    CHECK(Status.IsOk() && Revision == 1);
    Saved = Data;
  });
  Game.Sidecar->ExportSession(TEXT("l-slot"), OnExported);
  CHECK(TickUntil({Game.Sidecar}, [&] { return Exported > 0; }));
  if (!CHECK(Saved.Num() > 16)) return;
  // Play on, then load the save.
  FSidecarDeltaBatch More;
  More.Upserts.Add(Character(TEXT("cat"), TEXT("Cat")));
  FCallLog Played, Loaded;
  Game.Sidecar->ApplyDeltas(TEXT("l-slot"), More, Recorder(Played));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Played.Calls > 0; }) && Played.Revision == 2);
  Game.Sidecar->ImportSession(Saved, Recorder(Loaded));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Loaded.Calls > 0; }));
  if (!CHECK(Loaded.Status.IsOk())) {
    std::fprintf(stderr, "  import: %s %s\n", Utf8(Loaded.Status.Reason).c_str(), Utf8(Loaded.Status.Message).c_str());
    return;
  }
  const int64 AfterLoad = Game.Sidecar->GetTrackedRevision(TEXT("l-slot"));
  CHECK(AfterLoad == Loaded.Revision && AfterLoad >= 1);
  // Writes go on from the loaded state, with no STALE_REVISION.
  FCallLog After;
  Game.Sidecar->ApplyDeltas(TEXT("l-slot"), More, Recorder(After));
  CHECK(TickUntil({Game.Sidecar}, [&] { return After.Calls > 0; }));
  CHECK(After.Status.IsOk() && After.Revision == AfterLoad + 1);
}

// (m) The typed ops that shape a voice: persona, mood, memory, lore card.
void VoiceOps() {
  ResetSettings(TEXT("state-m"));
  FGame Game;
  if (!OpenWithGuard(Game, TEXT("m-slot"))) return;
  FSidecarDeltaBatch Batch;
  FSidecarPersona Persona;
  Persona.ActorId = TEXT("guard");
  Persona.Identity = TEXT("You are {npcName}, who guards the north gate.");
  Persona.InviolableRules.Add(TEXT("Never open the gate at night."));
  Persona.MoodModifiers.Add(TEXT("angry"), TEXT("Short, clipped words."));
  Persona.Slots.Add(TEXT("npcName"), TEXT("Guard"));
  Batch.Personas.Add(Persona);
  FSidecarMood Mood;
  Mood.ActorId = TEXT("guard");
  Mood.Pleasure = -0.5f;
  Mood.Arousal = 0.25f;
  Batch.Moods.Add(Mood);
  FSidecarMemory Memory;
  Memory.ActorId = TEXT("guard");
  Memory.Text = TEXT("The player paid the toll last winter.");
  Batch.Memories.Add(Memory);
  FSidecarLoreCard Card;
  Card.Id = TEXT("north-gate");
  Card.Title = TEXT("The North Gate");
  Card.Text = TEXT("Built after the siege.");
  Card.Triggers.Add(TEXT("gate"));
  Card.Visibility = ESidecarVisibility::KnownTo;
  Card.KnownTo.Add(TEXT("guard"));
  Batch.LoreCards.Add(Card);
  FCallLog Applied;
  Game.Sidecar->ApplyDeltas(TEXT("m-slot"), Batch, Recorder(Applied));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Applied.Calls > 0; }));
  if (!CHECK(Applied.Status.IsOk() && Applied.Revision == 2)) {
    std::fprintf(stderr, "  voice ops: %s %s\n", Utf8(Applied.Status.Reason).c_str(), Utf8(Applied.Status.Message).c_str());
    return;
  }
  int Got = 0;
  FString Json;
  FSidecarJsonDone OnState;
  OnState.StandInBindLambda([&](const FSidecarStatus&, const FString& State, int64) {
    ++Got;
    Json = State;
  });
  Game.Sidecar->GetState(TEXT("m-slot"), OnState);
  CHECK(TickUntil({Game.Sidecar}, [&] { return Got > 0; }));
  for (const TCHAR* Expected : {TEXT("who guards the north gate"), TEXT("Never open the gate at night."), TEXT("Short, clipped words."),
                                TEXT("-0.5"), TEXT("paid the toll last winter"), TEXT("The North Gate"),
                                TEXT("VISIBILITY_LEVEL_KNOWN_TO")}) {
    if (!CHECK(Json.Contains(Expected, ESearchCase::CaseSensitive))) {
      std::fprintf(stderr, "  GetState lacks [%s]\n", Utf8(FString(Expected)).c_str());
    }
  }
  // The one-op nodes: a mood change, then a memory.
  FCallLog Calmer, Remembered;
  Mood.Pleasure = 0.75f;
  Game.Sidecar->SetMood(TEXT("m-slot"), Mood, Recorder(Calmer));
  Memory.Text = TEXT("The player brought bread.");
  Game.Sidecar->AddMemory(TEXT("m-slot"), Memory, Recorder(Remembered));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Remembered.Calls > 0; }));
  CHECK(Calmer.Status.IsOk() && Calmer.Revision == 3 && Remembered.Status.IsOk() && Remembered.Revision == 4);
  // A bad typed op is refused whole, as any bad op.
  FSidecarDeltaBatch BadBatch;
  FSidecarLoreCard Nameless;
  Nameless.Text = TEXT("no ID");
  BadBatch.LoreCards.Add(Nameless);
  FCallLog Bad;
  Game.Sidecar->ApplyDeltas(TEXT("m-slot"), BadBatch, Recorder(Bad));
  CHECK(TickUntil({Game.Sidecar}, [&] { return Bad.Calls > 0; }));
  CHECK(Bad.Status.Code == GAME_SIDECAR_INVALID_ARGUMENT && Game.Sidecar->GetTrackedRevision(TEXT("m-slot")) == 4);
}

// (n) Calls and runs asked for while Starting are held, and go to the sidecar the
// launch ends with, also after a retry on <StateFolder>-2; the sidecar's own error
// lines reach the Output Log as errors.
void HeldWhileStarting() {
  ResetSettings(TEXT("shared-n"));
  FGame First;
  if (!CHECK(First.bInitialized) || !First.TickUntilReady()) return;
  int SidecarErrors = 0;
  StandIn::SetLogHook([&SidecarErrors](const char*, ELogVerbosity::Type Verbosity, const FString& Text) {
    SidecarErrors += Verbosity == ELogVerbosity::Error && Text.StartsWith(TEXT("sidecar: ")) ? 1 : 0;
  });
  FGame Second;  // Starting: its first launch will be refused STATE_DIR_LOCKED
  CHECK(Second.Sidecar->GetState() == ESidecarState::Starting);
  FCallLog Opened, Applied;
  Second.Sidecar->OpenSession(TEXT("n-slot"), Recorder(Opened));
  FSidecarDeltaBatch Batch;
  Batch.Upserts.Add(Character(TEXT("guard"), TEXT("Guard")));
  Second.Sidecar->ApplyDeltas(TEXT("n-slot"), Batch, Recorder(Applied));
  FRunLog Run;
  USidecarRunAction* Action =
      USidecarRunAction::Narrate(Second.Instance, TEXT("n-slot"), TEXT("The gate opens."), FString(), {}, {}, FString());
  Run.Listen(Action);
  Action->Activate();
  CHECK(TickUntil({Second.Sidecar}, [&] { return Run.Finished + Run.Errors > 0; }));
  StandIn::SetLogHook(nullptr);
  CHECK(Second.Sidecar->StateFolder.EndsWith(TEXT("-2")));
  if (!CHECK(Opened.Status.IsOk() && Applied.Status.IsOk() && Applied.Revision == 1 && Run.Finished == 1)) {
    std::fprintf(stderr, "  held: open %s, apply %s, run %s\n", Utf8(Opened.Status.Message).c_str(),
                 Utf8(Applied.Status.Message).c_str(), Utf8(Run.Last.Status.Message).c_str());
  }
  CHECK(SidecarErrors >= 1);  // the refused sidecar's "state dir in use" line
}

// (o) DefaultGame.ini ships: a provider key in the project's Environment is warned
// about at launch; the per-user SecretEnvironment is not.
void SecretsWarned() {
  UGameSidecarSettings* Settings = ResetSettings(TEXT("state-o"));
  Settings->Environment.Add(TEXT("OPENAI_API_KEY"), TEXT("sk-not-a-real-key"));
  Settings->Environment.Add(TEXT("GAME_SIDECAR_LOG_LEVEL"), TEXT("info"));
  GetMutableDefault<UGameSidecarUserSettings>()->SecretEnvironment.Add(TEXT("ANTHROPIC_API_KEY"), TEXT("sk-user"));
  std::vector<FString> Warnings;
  StandIn::SetLogPrintLevel(ELogVerbosity::Error);  // the warning below is expected: counted, not printed
  StandIn::SetLogHook([&Warnings](const char*, ELogVerbosity::Type Verbosity, const FString& Text) {
    if (Verbosity == ELogVerbosity::Warning && Text.Contains(TEXT("looks like a secret"))) Warnings.push_back(Text);
  });
  {
    FGame Game;
    CHECK(Game.bInitialized && Game.TickUntilReady());
  }
  StandIn::SetLogHook(nullptr);
  StandIn::SetLogPrintLevel(GLogPrintLevel);
  GetMutableDefault<UGameSidecarUserSettings>()->SecretEnvironment.Empty();
  CHECK(Warnings.size() == 1 && Warnings[0].Contains(TEXT("OPENAI_API_KEY"), ESearchCase::CaseSensitive));
  CHECK(game_sidecar_wait_released(30000) == 0);
}

}  // namespace

const FCase BlueprintCases[] = {
    {"h. Decide node", DecideNode},
    {"i. Continue, Describe, sentence mentions", TextNodesAndMentions},
    {"k. tracked writes through a crash", TrackedWritesThroughACrash},
    {"l. a save game: export, import", SaveGame},
    {"m. persona, mood, memory, lore card", VoiceOps},
    {"n. calls held while Starting", HeldWhileStarting},
    {"o. a secret in the shipped settings is warned about", SecretsWarned},
};
const size_t BlueprintCaseCount = sizeof(BlueprintCases) / sizeof(BlueprintCases[0]);

}  // namespace PluginRun
