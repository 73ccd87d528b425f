// Blueprint async nodes for runs. Each node's "Run Task" pin is the action
// itself: call Cancel on it to end the run (OnError with RUN_CANCELLED). Pins
// fire on the game thread, from the subsystem's drain.
//
// Text nodes (USidecarRunAction): Narrate, Dialogue, Continue, Describe.
//   OnText     every text delta as it streams (display names: engine IDs never
//              reach it; Event.Mentions has the entities it names)
//   OnSentence each complete sentence (and the unfinished tail at the end), its
//              mentions re-based onto the sentence
//   OnFinished once, with the whole text and all its mentions
//   OnError    once, instead of OnFinished (Event.Status says why)
// The decision node is USidecarDecideAction (GameSidecarDecideAction.h).
#pragma once

#include "CoreMinimal.h"
#include "Kismet/BlueprintAsyncActionBase.h"
#include "GameSidecarTypes.h"
#include "GameSidecarRunAction.generated.h"

class UGameSidecarSubsystem;
struct game_sidecar_event;
namespace GameSidecarOps { struct FRunSpec; }

DECLARE_DYNAMIC_MULTICAST_DELEGATE_TwoParams(FSidecarRunPin, const FString&, Text, const FSidecarRunEvent&, Event);

// What every run node shares: the run's start, its cancel, its end.
UCLASS(Abstract)
class GAMESIDECAR_API USidecarRunActionBase : public UBlueprintAsyncActionBase
{
	GENERATED_BODY()

public:
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnError;

	// Ends the run: OnError fires with CANCELLED / RUN_CANCELLED (if it has not ended).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void Cancel();

	// The run's ID once started ("" before), for ReadTranscript and the like.
	UFUNCTION(BlueprintPure, Category = "Game Sidecar")
	FString GetRunId() const { return RunId; }

	virtual void Activate() override;

protected:
	void Prepare(UObject* WorldContextObject, const GameSidecarOps::FRunSpec& Spec);
	// The run's start proper, once the sidecar is started (Failed: it could not be).
	void Start(const FSidecarStatus* Failed);
	// Each event but RUN_ERROR (the base ends the node with OnError); true on the run's last.
	virtual bool HandleEvent(const game_sidecar_event& Event) = 0;
	void Fail(const FSidecarStatus& Status);

	TWeakObjectPtr<UGameSidecarSubsystem> Subsystem;
	FString RequestJson;
	uint64 Run = 0;
	FString RunId;
	bool bEnded = false;
	bool bCancelRequested = false;
};

UCLASS(meta = (ExposedAsyncProxy = "RunTask"))
class GAMESIDECAR_API USidecarRunAction : public USidecarRunActionBase
{
	GENERATED_BODY()

public:
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnText;
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnSentence;
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnFinished;

	// Narrates what happened. ActorId: whose perspective ("" = the narrator's);
	// EntityIds: the entities involved; FocusIds: what the prompt centres on;
	// Profile: the model profile ("" = the session's).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject",
	                  AutoCreateRefTerm = "EntityIds,FocusIds", AdvancedDisplay = "FocusIds,Profile"))
	static USidecarRunAction* Narrate(UObject* WorldContextObject, const FString& SessionId, const FString& WhatHappened,
	                                  const FString& ActorId, const TArray<FString>& EntityIds,
	                                  const TArray<FString>& FocusIds, const FString& Profile);

	// ActorId answers SpeakerId's Line ("" speaker: the session's player).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject",
	                  AutoCreateRefTerm = "FocusIds", AdvancedDisplay = "FocusIds,Profile"))
	static USidecarRunAction* Dialogue(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
	                                   const FString& SpeakerId, const FString& Line, const TArray<FString>& FocusIds,
	                                   const FString& Profile);

	// Carries the story on from ActorId's last reply.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject",
	                  AutoCreateRefTerm = "FocusIds", AdvancedDisplay = "FocusIds,Profile"))
	static USidecarRunAction* Continue(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
	                                   const TArray<FString>& FocusIds, const FString& Profile);

	// Describes EntityId as ActorId perceives it; Aspect: "appearance", "mood"... ("" = all).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject",
	                  AutoCreateRefTerm = "FocusIds", AdvancedDisplay = "FocusIds,Profile"))
	static USidecarRunAction* Describe(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
	                                   const FString& EntityId, const FString& Aspect, const TArray<FString>& FocusIds,
	                                   const FString& Profile);

protected:
	virtual bool HandleEvent(const game_sidecar_event& Event) override;

private:
	static USidecarRunAction* Make(UObject* WorldContextObject, const GameSidecarOps::FRunSpec& Spec);
	void EmitSentence(const FSidecarRunEvent& Base);

	FString FullText;
	TArray<FSidecarMention> FullMentions;
	FString Sentence;  // untrimmed
	TArray<FSidecarMention> SentenceMentions;  // indices into Sentence
};
