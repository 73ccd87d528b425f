#include "GameSidecarRunAction.h"

#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "Engine/World.h"
#include "GameSidecarOps.h"
#include "GameSidecarSubsystem.h"
#include "GameSidecarText.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

using GameSidecarOps::FRunSpec;
using GameSidecarText::FromUtf8;

void USidecarRunActionBase::Prepare(UObject* WorldContextObject, const FRunSpec& Spec)
{
	UWorld* World = GEngine ? GEngine->GetWorldFromContextObject(WorldContextObject, EGetWorldErrorMode::LogAndReturnNull) : nullptr;
	UGameInstance* Instance = World ? World->GetGameInstance() : nullptr;
	Subsystem = Instance ? Instance->GetSubsystem<UGameSidecarSubsystem>() : nullptr;
	RequestJson = GameSidecarOps::RunRequestJson(Spec);
	// Kept alive by the game instance until SetReadyToDestroy.
	RegisterWithGameInstance(WorldContextObject);
}

void USidecarRunActionBase::Activate()
{
	UGameSidecarSubsystem* Owner = Subsystem.Get();
	if (Owner == nullptr)
	{
		Fail(FSidecarStatus::Local(GAME_SIDECAR_FAILED_PRECONDITION, FString(),
		                           TEXT("no GameSidecar subsystem in this game instance (see the RunsOn setting)")));
		return;
	}
	// Now, or once a sidecar that is Starting is Ready; a failure comes on a later tick.
	TWeakObjectPtr<USidecarRunActionBase> Weak(this);
	Owner->WhenStarted([Weak](const FSidecarStatus* Failed) {
		if (USidecarRunActionBase* Self = Weak.Get())
		{
			Self->Start(Failed);
		}
	});
}

void USidecarRunActionBase::Start(const FSidecarStatus* Failed)
{
	UGameSidecarSubsystem* Owner = Subsystem.Get();
	if (bEnded)
	{
		return;
	}
	if (Failed != nullptr || Owner == nullptr)
	{
		Fail(Failed != nullptr ? *Failed : FSidecarStatus());
		return;
	}
	if (bCancelRequested)
	{
		Fail(FSidecarStatus::Local(GAME_SIDECAR_CANCELLED, TEXT("RUN_CANCELLED"), TEXT("run cancelled before it started")));
		return;
	}
	TWeakObjectPtr<USidecarRunActionBase> Weak(this);
	Run = Owner->StartRunJson(RequestJson, [Weak](const game_sidecar_event& Event) {
		if (USidecarRunActionBase* Self = Weak.Get())
		{
			if (Event.run_kind == GAME_SIDECAR_RUN_STARTED)
			{
				Self->RunId = FromUtf8(Event.run_id);
			}
			if (Event.run_kind == GAME_SIDECAR_RUN_ERROR)
			{
				Self->Fail(UGameSidecarSubsystem::ToStatus(Event.result));  // every node ends so on an error
				return true;
			}
			return Self->HandleEvent(Event);
		}
		return Event.run_kind == GAME_SIDECAR_RUN_FINISHED || Event.run_kind == GAME_SIDECAR_RUN_ERROR;
	});
}

void USidecarRunActionBase::Cancel()
{
	UGameSidecarSubsystem* Owner = Subsystem.Get();
	if (bEnded)
	{
		return;
	}
	if (Run == 0)
	{
		bCancelRequested = true;  // not started yet (the sidecar is starting): it ends when it would start
		return;
	}
	if (Owner != nullptr)
	{
		Owner->CancelRun(Run);
	}
}

void USidecarRunActionBase::Fail(const FSidecarStatus& Status)
{
	bEnded = true;
	FSidecarRunEvent Details;
	Details.RunId = RunId;
	Details.Status = Status;
	OnError.Broadcast(Status.Message, Details);
	SetReadyToDestroy();
}

USidecarRunAction* USidecarRunAction::Make(UObject* WorldContextObject, const FRunSpec& Spec)
{
	USidecarRunAction* Action = NewObject<USidecarRunAction>();
	Action->Prepare(WorldContextObject, Spec);
	return Action;
}

USidecarRunAction* USidecarRunAction::Narrate(UObject* WorldContextObject, const FString& SessionId,
                                              const FString& WhatHappened, const FString& ActorId,
                                              const TArray<FString>& EntityIds, const TArray<FString>& FocusIds,
                                              const FString& Profile)
{
	FRunSpec Spec;
	Spec.Kind = TEXT("narrate");
	Spec.SessionId = SessionId;
	Spec.Text = WhatHappened;
	Spec.ActorId = ActorId;
	Spec.EntityIds = EntityIds;
	Spec.FocusIds = FocusIds;
	Spec.Profile = Profile;
	return Make(WorldContextObject, Spec);
}

USidecarRunAction* USidecarRunAction::Dialogue(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
                                               const FString& SpeakerId, const FString& Line,
                                               const TArray<FString>& FocusIds, const FString& Profile)
{
	FRunSpec Spec;
	Spec.Kind = TEXT("dialogue");
	Spec.SessionId = SessionId;
	Spec.ActorId = ActorId;
	Spec.SpeakerId = SpeakerId;
	Spec.Text = Line;
	Spec.FocusIds = FocusIds;
	Spec.Profile = Profile;
	return Make(WorldContextObject, Spec);
}

USidecarRunAction* USidecarRunAction::Continue(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
                                               const TArray<FString>& FocusIds, const FString& Profile)
{
	FRunSpec Spec;
	Spec.Kind = TEXT("continueStory");
	Spec.SessionId = SessionId;
	Spec.ActorId = ActorId;
	Spec.FocusIds = FocusIds;
	Spec.Profile = Profile;
	return Make(WorldContextObject, Spec);
}

USidecarRunAction* USidecarRunAction::Describe(UObject* WorldContextObject, const FString& SessionId, const FString& ActorId,
                                               const FString& EntityId, const FString& Aspect,
                                               const TArray<FString>& FocusIds, const FString& Profile)
{
	FRunSpec Spec;
	Spec.Kind = TEXT("describe");
	Spec.SessionId = SessionId;
	Spec.ActorId = ActorId;
	Spec.EntityId = EntityId;
	Spec.Aspect = Aspect;
	Spec.FocusIds = FocusIds;
	Spec.Profile = Profile;
	return Make(WorldContextObject, Spec);
}

void USidecarRunAction::EmitSentence(const FSidecarRunEvent& Base)
{
	// Trimmed as shown; the mentions move with the cut.
	int32 Lead = 0;
	while (Lead < Sentence.Len() && FChar::IsWhitespace(Sentence[Lead]))
	{
		++Lead;
	}
	const FString Done = Sentence.TrimStartAndEnd();
	FSidecarRunEvent Details = Base;
	Details.Mentions.Reset();
	for (FSidecarMention Mention : SentenceMentions)
	{
		Mention.Start -= Lead;
		if (Mention.Start >= 0 && Mention.Start + Mention.Length <= Done.Len())
		{
			Details.Mentions.Add(Mention);
		}
	}
	Sentence.Reset();
	SentenceMentions.Reset();
	if (!Done.IsEmpty())
	{
		OnSentence.Broadcast(Done, Details);
	}
}

bool USidecarRunAction::HandleEvent(const game_sidecar_event& Event)
{
	FSidecarRunEvent Details;
	Details.RunId = RunId;
	switch (Event.run_kind)
	{
	case GAME_SIDECAR_RUN_TEXT:
	{
		const FString Delta = FromUtf8(Event.text);
		for (size_t i = 0; i < Event.mention_count; ++i)
		{
			const game_sidecar_mention& M = Event.mentions[i];
			FSidecarMention Mention;
			Mention.EntityId = FromUtf8(M.entity_id);
			Mention.Start = M.start_utf16;  // FString indices into this delta
			Mention.Length = M.length_utf16;
			Mention.StartUtf8 = M.start;
			Mention.LengthUtf8 = M.length;
			Details.Mentions.Add(Mention);
			FSidecarMention InSentence = Mention;
			InSentence.Start += Sentence.Len();
			SentenceMentions.Add(InSentence);
			FSidecarMention InFull = Mention;
			InFull.Start += FullText.Len();
			FullMentions.Add(InFull);
		}
		FullText += Delta;
		Sentence += Delta;
		OnText.Broadcast(Delta, Details);
		if (Event.sentence_end)
		{
			EmitSentence(Details);
		}
		return false;
	}
	case GAME_SIDECAR_RUN_FINISHED:
		EmitSentence(Details);
		bEnded = true;
		Details.Mentions = FullMentions;
		OnFinished.Broadcast(FullText, Details);
		SetReadyToDestroy();
		return true;
	default:
		return false;
	}
}
