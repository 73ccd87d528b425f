// The Decide node: an NPC chooses one of the game's actions. It delivers the
// choice, never the model's raw reply: no text streams from it.
//   OnDecided         once: Event.Decision (action ID, index, parameters, the
//                     NPC's line and the entities it names); Text is the line
//   OnAttemptRejected each reply the sidecar refused (Event.Attempt, and why in
//                     Event.Status.Message); another attempt follows
//   OnError           once, instead of OnDecided (INVALID_CHOICE when every
//                     attempt was refused; RUN_CANCELLED after Cancel)
#pragma once

#include "CoreMinimal.h"
#include "GameSidecarRunAction.h"
#include "GameSidecarDecideAction.generated.h"

UCLASS(meta = (ExposedAsyncProxy = "RunTask"))
class GAMESIDECAR_API USidecarDecideAction : public USidecarRunActionBase
{
	GENERATED_BODY()

public:
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnDecided;
	UPROPERTY(BlueprintAssignable)
	FSidecarRunPin OnAttemptRejected;

	// ActorId chooses among Options in Situation. MaxAttempts: 0 = the sidecar's (3).
	UFUNCTION(BlueprintCallable, Category = "Game Sidecar",
	          meta = (BlueprintInternalUseOnly = "true", WorldContext = "WorldContextObject",
	                  AutoCreateRefTerm = "FocusIds", AdvancedDisplay = "FocusIds,Profile,MaxAttempts"))
	static USidecarDecideAction* Decide(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
	                                    const FString& Situation, const TArray<FSidecarActionOption>& Options,
	                                    const TArray<FString>& FocusIds, const FString& Profile, int32 MaxAttempts);

protected:
	virtual bool HandleEvent(const game_sidecar_event& Event) override;

private:
	FSidecarDecision Decision;
	bool bDecided = false;
};
