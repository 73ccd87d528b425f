#include "GameSidecarRunAction.h"

#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "Engine/World.h"
#include "GameSidecarSubsystem.h"
#include "GameSidecarText.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

using GameSidecarText::FromUtf8;

USidecarRunAction* USidecarRunAction::Make(UObject* WorldContextObject, int32 InInput, const FString& InSessionId,
                                           const FString& InActorId, const FString& InText, const FString& InSpeakerId,
                                           const TArray<FSidecarActionOption>& InOptions)
{
	USidecarRunAction* Action = NewObject<USidecarRunAction>();
	UWorld* World = GEngine ? GEngine->GetWorldFromContextObject(WorldContextObject, EGetWorldErrorMode::LogAndReturnNull) : nullptr;
	UGameInstance* Instance = World ? World->GetGameInstance() : nullptr;
	Action->Subsystem = Instance ? Instance->GetSubsystem<UGameSidecarSubsystem>() : nullptr;
	Action->Input = InInput;
	Action->SessionId = InSessionId;
	Action->ActorId = InActorId;
	Action->Text = InText;
	Action->SpeakerId = InSpeakerId;
	Action->Options = InOptions;
	// Kept alive by the game instance until SetReadyToDestroy.
	Action->RegisterWithGameInstance(WorldContextObject);
	return Action;
}

USidecarRunAction* USidecarRunAction::Narrate(UObject* WorldContextObject, const FString& SessionId, const FString& WhatHappened)
{
	return Make(WorldContextObject, GAME_SIDECAR_INPUT_NARRATE, SessionId, FString(), WhatHappened, FString(), {});
}

USidecarRunAction* USidecarRunAction::Dialogue(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
                                               const FString& SpeakerId, const FString& Line)
{
	return Make(WorldContextObject, GAME_SIDECAR_INPUT_DIALOGUE, SessionId, ActorId, Line, SpeakerId, {});
}

USidecarRunAction* USidecarRunAction::Decide(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
                                             const FString& Situation, const TArray<FSidecarActionOption>& Options)
{
	return Make(WorldContextObject, GAME_SIDECAR_INPUT_DECIDE, SessionId, ActorId, Situation, FString(), Options);
}

void USidecarRunAction::Activate()
{
	UGameSidecarSubsystem* Owner = Subsystem.Get();
	if (Owner == nullptr)
	{
		FSidecarStatus Status;
		Status.Code = GAME_SIDECAR_FAILED_PRECONDITION;
		Status.Message = TEXT("no GameSidecar subsystem in this game instance");
		Fail(Status);
		return;
	}
	TWeakObjectPtr<USidecarRunAction> Weak(this);
	Run = Owner->StartRun(Input, SessionId, ActorId, Text, SpeakerId, Options, [Weak](const game_sidecar_event& Event) {
		if (USidecarRunAction* Self = Weak.Get())
		{
			return Self->HandleEvent(Event);
		}
		return Event.run_kind == GAME_SIDECAR_RUN_FINISHED || Event.run_kind == GAME_SIDECAR_RUN_ERROR;
	});
	if (Run == 0)
	{
		Fail(Owner->NoLibraryStatus());
	}
}

void USidecarRunAction::Cancel()
{
	if (UGameSidecarSubsystem* Owner = Subsystem.Get())
	{
		Owner->CancelRun(Run);
	}
}

bool USidecarRunAction::HandleEvent(const game_sidecar_event& Event)
{
	FSidecarRunEvent Details;
	Details.RunId = RunId;
	switch (Event.run_kind)
	{
	case GAME_SIDECAR_RUN_STARTED:
		RunId = FromUtf8(Event.run_id);
		return false;
	case GAME_SIDECAR_RUN_TEXT:
	{
		const FString Delta = FromUtf8(Event.text);
		for (size_t i = 0; i < Event.mention_count; ++i)
		{
			const game_sidecar_mention& M = Event.mentions[i];
			FSidecarMention Mention;
			Mention.EntityId = FromUtf8(M.entity_id);
			Mention.Start = M.start_utf16;  // FString indices
			Mention.Length = M.length_utf16;
			Mention.StartUtf8 = M.start;
			Mention.LengthUtf8 = M.length;
			Details.Mentions.Add(Mention);
		}
		FullText += Delta;
		Sentence += Delta;
		OnText.Broadcast(Delta, Details);
		if (Event.sentence_end)
		{
			const FString Done = Sentence.TrimStartAndEnd();
			Sentence.Reset();
			if (!Done.IsEmpty())
			{
				FSidecarRunEvent SentenceDetails;
				SentenceDetails.RunId = RunId;
				OnSentence.Broadcast(Done, SentenceDetails);
			}
		}
		return false;
	}
	case GAME_SIDECAR_RUN_ATTEMPT_REJECTED:
		// A decision reply was void; the next attempt's text replaces it.
		FullText.Reset();
		Sentence.Reset();
		return false;
	case GAME_SIDECAR_RUN_ACTION:
		ActionId = FromUtf8(Event.action_id);
		return false;
	case GAME_SIDECAR_RUN_FINISHED:
	{
		const FString Tail = Sentence.TrimStartAndEnd();
		Sentence.Reset();
		if (!Tail.IsEmpty())
		{
			OnSentence.Broadcast(Tail, Details);
		}
		Details.ActionId = ActionId;
		OnFinished.Broadcast(FullText, Details);
		SetReadyToDestroy();
		return true;
	}
	case GAME_SIDECAR_RUN_ERROR:
		Fail(UGameSidecarSubsystem::ToStatus(Event.result));
		return true;
	default:
		return false;
	}
}

void USidecarRunAction::Fail(const FSidecarStatus& Status)
{
	FSidecarRunEvent Details;
	Details.RunId = RunId;
	Details.Status = Status;
	OnError.Broadcast(Status.Message, Details);
	SetReadyToDestroy();
}
