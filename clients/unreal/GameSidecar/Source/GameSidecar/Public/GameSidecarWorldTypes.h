// Typed delta ops for what shapes an NPC's voice: its persona, its mood, what it
// remembers, and the lore cards the prompt may draw on (state.proto's SetPersonaOp,
// SetMoodOp, RecordMemoryOp, UpsertLoreCardOp). They go in an FSidecarDeltaBatch
// like the entity ops; any op without a struct here still goes as JSON
// (FSidecarDeltaBatch::ExtraOpsJson).
#pragma once

#include "CoreMinimal.h"
#include "GameSidecarWorldTypes.generated.h"

// Who may see a lore card in a prompt (types.proto's VisibilityLevel).
UENUM(BlueprintType)
enum class ESidecarVisibility : uint8
{
	// Anyone whose perspective reaches it.
	Public,
	// Only the actors in KnownTo.
	KnownTo,
	// Only the entity itself, when it is the acting actor.
	Private,
	// Never in any prompt.
	Hidden,
};

// An actor's persona (docs/context.md, "Personas and mood"): a template file by name, or an
// inline one (Identity, rules, mood modifiers, reminder), with slot fillers.
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarPersona
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString ActorId;
	// A template file of the sidecar's templates folder; empty: the inline fields below.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString TemplateName;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Identity;
	// Rules no mood may change.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FString> InviolableRules;
	// Mood tag ("calm", "joyful", "angry", "scared", "sad", "neutral") -> text.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TMap<FString, FString> MoodModifiers;
	// The identity reminder line placed near the end of the prompt.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Reminder;
	// {npcName}, {location}...: replaced verbatim in the template.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TMap<FString, FString> Slots;
};

// An actor's mood as pleasure, arousal, dominance, each -1..1 (types.proto's Pad).
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarMood
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString ActorId;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar", meta = (ClampMin = "-1", ClampMax = "1"))
	float Pleasure = 0.f;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar", meta = (ClampMin = "-1", ClampMax = "1"))
	float Arousal = 0.f;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar", meta = (ClampMin = "-1", ClampMax = "1"))
	float Dominance = 0.f;
};

// A durable fact an actor remembers (empty ActorId: the narrator).
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarMemory
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString ActorId;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Text;
};

// A lore card: put in a prompt when one of its triggers comes up.
USTRUCT(BlueprintType)
struct GAMESIDECAR_API FSidecarLoreCard
{
	GENERATED_BODY()

	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Id;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Title;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	FString Text;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FString> Triggers;
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	ESidecarVisibility Visibility = ESidecarVisibility::Public;
	// Visibility KnownTo: the actors who know it.
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "Game Sidecar")
	TArray<FString> KnownTo;
};
