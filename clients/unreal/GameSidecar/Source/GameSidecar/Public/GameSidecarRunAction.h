// Blueprint async nodes for runs: Narrate, Dialogue and Decide. Each pin fires
// on the game thread (from the subsystem's drain).
//   OnText     every text delta as it streams (display names: engine IDs never reach it)
//   OnSentence each complete sentence (and the unfinished tail at the end)
//   OnFinished once, with the whole text (and a Decide node's action in Event.ActionId)
//   OnError    once, instead of OnFinished (Event.Status says why)
#pragma once

#include "CoreMinimal.h"
#include "Kismet/BlueprintAsyncActionBase.h"
#include "GameSidecarTypes.h"
#include "GameSidecarRunAction.generated.h"

class UGameSidecarSubsystem;

DECLARE_DYNAMIC_MULTICAST_DELEGATE_TwoParams(FSidecarRunPin, const FString&, Text, const FSidecarRunEvent&, Event);

UCLASS()
class GAMESIDECAR_API USidecarRunAction : public UBlueprintAsyncActionBase
{
	GENERATED_BODY()

public:
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnText;
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnSentence;
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnFinished;
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnError;

	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject"))
	static USidecarRunAction* Narrate(UObject* WorldContextObject, const FString& SessionId, const FString& WhatHappened);

	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject"))
	static USidecarRunAction* Dialogue(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
	                                   const FString& SpeakerId, const FString& Line);

	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject"))
	static USidecarRunAction* Decide(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
	                                 const FString& Situation, const TArray<FSidecarActionOption>& Options);

	// Cancels the run: OnError fires with CANCELLED / RUN_CANCELLED.
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar")
	void Cancel();

	virtual void Activate() override;

private:
	static USidecarRunAction* Make(UObject* WorldContextObject, int32 Input, const FString& SessionId,
	                               const FString& ActorId, const FString& Text, const FString& SpeakerId,
	                               const TArray<FSidecarActionOption>& Options);
	// Returns true on the run's last event.
	bool HandleEvent(const struct game_sidecar_event& Event);
	void Fail(const FSidecarStatus& Status);

	TWeakObjectPtr<UGameSidecarSubsystem> Subsystem;
	int32 Input = 0;
	FString SessionId, ActorId, Text, SpeakerId;
	TArray<FSidecarActionOption> Options;
	uint64 Run = 0;
	FString RunId;
	FString ActionId;
	FString FullText;
	FString Sentence;
};
