#include "GameSidecarDecideAction.h"

#include "GameSidecarJson.h"
#include "GameSidecarOps.h"
#include "GameSidecarText.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

using GameSidecarText::FromUtf8;

USidecarDecideAction* USidecarDecideAction::Decide(UObject* WorldContextObject, const FString& SessionId,
                                                   const FString& ActorId, const FString& Situation,
                                                   const TArray<FSidecarActionOption>& Options,
                                                   const TArray<FString>& FocusIds, const FString& Profile,
                                                   int32 MaxAttempts)
{
	GameSidecarOps::FRunSpec Spec;
	Spec.Kind = TEXT("decision");
	Spec.SessionId = SessionId;
	Spec.ActorId = ActorId;
	Spec.Text = Situation;
	Spec.Options = Options;
	Spec.FocusIds = FocusIds;
	Spec.Profile = Profile;
	Spec.MaxAttempts = MaxAttempts;
	USidecarDecideAction* Action = NewObject<USidecarDecideAction>();
	Action->Prepare(WorldContextObject, Spec);
	return Action;
}

bool USidecarDecideAction::HandleEvent(const game_sidecar_event& Event)
{
	FSidecarRunEvent Details;
	Details.RunId = RunId;
	switch (Event.run_kind)
	{
	case GAME_SIDECAR_RUN_ATTEMPT_REJECTED:
	{
		FString Reason;
		Details.Attempt = GameSidecarJson::RejectedAttempt(FromUtf8(Event.event_json), Reason);
		Details.Status.Message = Reason;
		OnAttemptRejected.Broadcast(Reason, Details);
		return false;
	}
	case GAME_SIDECAR_RUN_ACTION:
		// The reply's text (its JSON, rejected attempts included) is never shown:
		// the choice is what the sidecar checked and mapped back to engine IDs.
		Decision = GameSidecarJson::Decision(FromUtf8(Event.event_json));
		bDecided = true;
		return false;
	case GAME_SIDECAR_RUN_FINISHED:
	{
		if (!bDecided)
		{
			Fail(FSidecarStatus::Local(GAME_SIDECAR_INTERNAL, TEXT("INTERNAL"), TEXT("the decision run finished without an action")));
			return true;
		}
		bEnded = true;
		Details.Decision = Decision;
		Details.ActionId = Decision.ActionId;
		OnDecided.Broadcast(Decision.Line, Details);
		SetReadyToDestroy();
		return true;
	}
	default:
		return false;  // text (the raw reply), notes, usage
	}
}
