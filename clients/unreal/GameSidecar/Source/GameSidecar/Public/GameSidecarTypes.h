// Blueprint-facing types: the outcome of a call, a run's events, and the common
// delta ops. Strings are FStrings (UTF-16); the C ABI below speaks UTF-8.
#pragma once

#include "CoreMinimal.h"
#include "GameSidecarWorldTypes.h"
#include "GameSidecarWriteTypes.h"
#include "GameSidecarTypes.generated.h"

// What the subsystem knows of its sidecar (the library's STATUS events, on the
// game thread). Restarting: it ended unasked and the restart policy is
// launching it again (Ready follows, or Failed when the policy is exhausted).
UENUM(BlueprintType)
enum class ESidecarState : uint8
{
	NotStarted,
	Starting,
	Ready,
	Stopped,
	Failed,
	Restarting,
};

UENUM(BlueprintType)
enum class ESidecarEntityKind : uint8
{
	Character,
	Location,
	Item,
	Faction,
	Player,
	Other,
};

// The outcome of a call: gRPC's code (0 = OK) and the sidecar's stable reason.
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarStatus
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 Code = 0;
	// ErrorReason name without prefix ("STALE_REVISION"); for a launch, the kind ("HANDSHAKE_TIMEOUT").
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString Reason;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString Message;
	// ErrorInfo metadata as JSON ({"current_revision": "7"}).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString MetadataJson;

	bool IsOk() const { return Code == 0; }

	// A status the plugin makes itself (no call reached the sidecar).
	static FSidecarStatus Local(int32 InCode, const FString& InReason, const FString& InMessage)
	{
		FSidecarStatus Status;
		Status.Code = InCode;
		Status.Reason = InReason;
		Status.Message = InMessage;
		Status.MetadataJson = TEXT("{}");
		return Status;
	}
};

// An entity named in a text delta. Start/Length index the FString Text (UTF-16
// code units); the UTF-8 byte span of the wire is kept beside it.
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarMention
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString EntityId;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 Start = 0;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 Length = 0;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 StartUtf8 = 0;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 LengthUtf8 = 0;
};

// How one sidecar process ended (OnExited; docs/protocol.md §1, "When the sidecar exits").
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarExit
{
	GENERATED_BODY()

	// It exited by itself with ExitCode (otherwise a signal ended it, or neither is known).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	bool bHasExitCode = false;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 ExitCode = 0;
	// A signal ended it (POSIX; 9 = SIGKILL).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	bool bHasSignal = false;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 Signal = 0;
	// The game asked for the stop.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	bool bRequested = false;
	// It stopped answering and was killed by the client.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	bool bHung = false;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int64 Pid = 0;
	// Its last <= 20 stderr lines: where it says why it ended.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString StderrTail;
	// One line for a log: "killed by signal 9 (SIGKILL), not requested; ...".
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString Description;
};

// What a Decide node chose: the game's action, its parameters, and what the NPC
// says while doing it (display names only, as in any text; the entities it names
// in MentionedIds). Never the model's raw reply.
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarDecision
{
	GENERATED_BODY()

	// The ActionId of the chosen FSidecarActionOption.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString ActionId;
	// Its index in the node's Options (0-based).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 Index = -1;
	// The option's parameters (its ParametersSchema), checked against it: an
	// integer in decimal, an entity as its engine ID, else the text as given.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	TMap<FString, FString> Parameters;
	// The NPC's line.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString Line;
	// Engine IDs of the entities the line names.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	TArray<FString> MentionedIds;
};

// What a run node's pins carry besides their text.
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarRunEvent
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString RunId;
	// The entities the pin's text names, with FString indices into that text:
	// OnText a delta's, OnSentence the sentence's, OnFinished the whole text's.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	TArray<FSidecarMention> Mentions;
	// OnDecided: the choice (also ActionId, for a quick switch on it).
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FSidecarDecision Decision;
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FString ActionId;
	// OnAttemptRejected: which attempt (1-based) and why; another follows.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	int32 Attempt = 0;
	// OnError: why the run ended (CANCELLED/RUN_CANCELLED after Cancel);
	// OnAttemptRejected: the reason in Message.
	UPROPERTY(BlueprintReadOnly, Category = "Game Sidecar")
	FSidecarStatus Status;
};

USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarActionOption
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString ActionId;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Label;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString TargetId;
	// What the actor fills in when it takes this action: a small JSON Schema
	// (docs/runs.md, "Actions with parameters"); empty: none.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString ParametersSchema;
};

// Delta ops. A batch is applied in this order: upserts, field changes, events,
// scene facts, personas, moods, memories, lore cards, extra JSON ops, lore card
// removals, entity removals.
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarEntity
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Id;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	ESidecarEntityKind Kind = ESidecarEntityKind::Character;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Name;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Description;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString LocationId;
};

USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarFieldChange
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString EntityId;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Field;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Value;
	// Unset the field instead of setting Value.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	bool bRemove = false;
};

USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarGameEvent
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Text;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString ActorId;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString LocationId;
};

USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarSceneFact
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Key;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Value;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	bool bRemove = false;
};

USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarDeltaBatch
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarEntity> Upserts;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarFieldChange> FieldChanges;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarGameEvent> Events;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarSceneFact> SceneFacts;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarPersona> Personas;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarMood> Moods;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarMemory> Memories;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FSidecarLoreCard> LoreCards;
	// Any other DeltaOp as proto3 JSON ({"setStory": {...}}): the escape hatch.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FString> ExtraOpsJson;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FString> RemoveLoreCardIds;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FString> RemoveEntityIds;
};

DECLARE_DYNAMIC_DELEGATE_TwoParams(FSidecarCallDone, const FSidecarStatus&, Status, int64, Revision);
DECLARE_DYNAMIC_DELEGATE_ThreeParams(FSidecarJsonDone, const FSidecarStatus&, Status, const FString&, Json, int64, Revision);
DECLARE_DYNAMIC_DELEGATE_ThreeParams(FSidecarExportDone, const FSidecarStatus&, Status, const TArray<uint8>&, SaveData, int64, Revision);
DECLARE_DYNAMIC_MULTICAST_DELEGATE_OneParam(FSidecarWritesSettledEvent, const FSidecarWritesSettled&, Settled);
DECLARE_DYNAMIC_MULTICAST_DELEGATE_TwoParams(FSidecarStateChanged, ESidecarState, State, const FSidecarStatus&, Status);
DECLARE_DYNAMIC_MULTICAST_DELEGATE_OneParam(FSidecarLogLine, const FString&, JsonLine);
DECLARE_DYNAMIC_MULTICAST_DELEGATE_OneParam(FSidecarExited, const FSidecarExit&, Exit);
