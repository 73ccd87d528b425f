// UGameSidecarSubsystem's calls: sessions (tracked), delta batches, the world as
// JSON, save games, and any unary call as JSON. Each answers on a later tick to
// its own delegate. Asked for while the sidecar is Starting, a call is held and
// sent once it is Ready (WhenStarted), so a launch retried on <StateFolder>-N
// loses none.
#include "GameSidecarSubsystem.h"

#include "GameSidecarJson.h"
#include "GameSidecarLog.h"
#include "GameSidecarModule.h"
#include "GameSidecarOps.h"
#include "GameSidecarText.h"
#include "Misc/Base64.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

using GameSidecarText::FromUtf8;
using GameSidecarText::JsonQuote;
using GameSidecarText::ToUtf8;

namespace
{
FString SessionRequest(const FString& SessionId) { return FString::Printf(TEXT("{\"sessionId\": %s}"), *JsonQuote(SessionId)); }
}  // namespace

void UGameSidecarSubsystem::OnCallResult(uint64 Handle, FSidecarCallDone OnDone)
{
	Handlers.Add(Handle, [OnDone](const game_sidecar_event& Event) {
		OnDone.ExecuteIfBound(ToStatus(Event.result), game_sidecar_result_revision(Event.result));
		return true;
	});
}

void UGameSidecarSubsystem::CallJson(const FString& Method, const FString& RequestJson,
                                     TFunction<void(const FSidecarStatus&, const FString&, int64)> OnDone)
{
	WhenStarted([this, Method, RequestJson, OnDone](const FSidecarStatus* Failed) {
		if (Failed != nullptr)
		{
			OnDone(*Failed, FString(), -1);
			return;
		}
		const uint64 Handle = game_sidecar_call_async(Sidecar, ToUtf8(Method).c_str(), ToUtf8(RequestJson).c_str(),
		                                              &UGameSidecarSubsystem::Dispatch, this);
		Handlers.Add(Handle, [OnDone](const game_sidecar_event& Event) {
			OnDone(ToStatus(Event.result), FromUtf8(game_sidecar_result_json(Event.result)),
			       game_sidecar_result_revision(Event.result));
			return true;
		});
	});
}

void UGameSidecarSubsystem::Track(const FString& SessionId, TFunction<void(const FSidecarStatus&, int64)> OnDone)
{
	WhenStarted([this, SessionId, OnDone](const FSidecarStatus* Failed) {
		if (Failed != nullptr)
		{
			OnDone(*Failed, -1);
			return;
		}
		const uint64 Handle = game_sidecar_track_async(Sidecar, ToUtf8(SessionId).c_str(), nullptr,
		                                               &UGameSidecarSubsystem::DispatchSettled, this,
		                                               &UGameSidecarSubsystem::Dispatch, this);
		Handlers.Add(Handle, [this, SessionId, OnDone](const game_sidecar_event& Event) {
			const FSidecarStatus Status = ToStatus(Event.result);
			if (Status.IsOk() && !TrackedSessions.Contains(SessionId))
			{
				TrackedSessions.Add(SessionId);
			}
			OnDone(Status, game_sidecar_result_revision(Event.result));
			return true;
		});
	});
}

void UGameSidecarSubsystem::OpenSession(const FString& SessionId, FSidecarCallDone OnDone)
{
	Track(SessionId, [OnDone](const FSidecarStatus& Status, int64 Revision) { OnDone.ExecuteIfBound(Status, Revision); });
}

void UGameSidecarSubsystem::CloseSession(const FString& SessionId, FSidecarCallDone OnDone)
{
	CallJson(TEXT("CloseSession"), SessionRequest(SessionId),
	         [this, SessionId, OnDone](const FSidecarStatus& Status, const FString&, int64 Revision) {
		         if (Status.IsOk() && Sidecar != nullptr)
		         {
			         TrackedSessions.Remove(SessionId);
			         game_sidecar_untrack(Sidecar, ToUtf8(SessionId).c_str());
		         }
		         OnDone.ExecuteIfBound(Status, Revision);
	         });
}

int64 UGameSidecarSubsystem::GetTrackedRevision(const FString& SessionId) const
{
	return Sidecar != nullptr ? game_sidecar_tracked_revision(Sidecar, ToUtf8(SessionId).c_str()) : -1;
}

void UGameSidecarSubsystem::SendBatch(const FSidecarDeltaBatch& Batch, const FSidecarCallDone& OnDone,
                                      TFunction<uint64(game_sidecar_batch*)> Send)
{
	// Built now, from the caller's structs (they may change after the call returns).
	game_sidecar_batch* Built = FGameSidecarModule::IsLibraryLoaded() ? game_sidecar_batch_create() : nullptr;
	const FString Bad = Built != nullptr ? GameSidecarOps::AddToBatch(Built, Batch) : FString();
	if (!Bad.IsEmpty())
	{
		// Nothing is sent; the error still arrives on a later tick, like any result.
		game_sidecar_batch_free(Built);
		DeliverLater([OnDone, Status = FSidecarStatus::Local(GAME_SIDECAR_INVALID_ARGUMENT, TEXT("INVALID_REQUEST"), TEXT("bad delta op: ") + Bad)]() { OnDone.ExecuteIfBound(Status, -1); });
		return;
	}
	WhenStarted([this, Built, OnDone, Send](const FSidecarStatus* Failed) {
		if (Failed != nullptr)
		{
			OnDone.ExecuteIfBound(*Failed, -1);
		}
		else
		{
			OnCallResult(Send(Built), OnDone);  // the call copies the batch
		}
		if (Built != nullptr)
		{
			game_sidecar_batch_free(Built);  // (a batch held when Deinitialize drops it is not freed: once, at exit)
		}
	});
}

void UGameSidecarSubsystem::ApplyDeltas(const FString& SessionId, const FSidecarDeltaBatch& Batch, FSidecarCallDone OnDone)
{
	SendBatch(Batch, OnDone, [this, SessionId](game_sidecar_batch* B) {
		return game_sidecar_tracked_apply_async(Sidecar, ToUtf8(SessionId).c_str(), nullptr, B,
		                                        &UGameSidecarSubsystem::Dispatch, this);
	});
}

void UGameSidecarSubsystem::SetPersona(const FString& SessionId, const FSidecarPersona& Persona, FSidecarCallDone OnDone)
{
	FSidecarDeltaBatch Batch;
	Batch.Personas.Add(Persona);
	ApplyDeltas(SessionId, Batch, OnDone);
}

void UGameSidecarSubsystem::SetMood(const FString& SessionId, const FSidecarMood& Mood, FSidecarCallDone OnDone)
{
	FSidecarDeltaBatch Batch;
	Batch.Moods.Add(Mood);
	ApplyDeltas(SessionId, Batch, OnDone);
}

void UGameSidecarSubsystem::AddMemory(const FString& SessionId, const FSidecarMemory& Memory, FSidecarCallDone OnDone)
{
	FSidecarDeltaBatch Batch;
	Batch.Memories.Add(Memory);
	ApplyDeltas(SessionId, Batch, OnDone);
}

void UGameSidecarSubsystem::SetLoreCard(const FString& SessionId, const FSidecarLoreCard& Card, FSidecarCallDone OnDone)
{
	FSidecarDeltaBatch Batch;
	Batch.LoreCards.Add(Card);
	ApplyDeltas(SessionId, Batch, OnDone);
}

void UGameSidecarSubsystem::ApplyDeltasAtRevision(const FString& SessionId, const FSidecarDeltaBatch& Batch,
                                                  int64 BaseRevision, const FString& DeltaId, FSidecarCallDone OnDone)
{
	SendBatch(Batch, OnDone, [this, SessionId, BaseRevision, DeltaId](game_sidecar_batch* B) {
		const std::string Delta = ToUtf8(DeltaId);
		return game_sidecar_apply_async(Sidecar, ToUtf8(SessionId).c_str(), BaseRevision,
		                                Delta.empty() ? nullptr : Delta.c_str(), B, &UGameSidecarSubsystem::Dispatch, this);
	});
}

void UGameSidecarSubsystem::GetState(const FString& SessionId, FSidecarJsonDone OnDone)
{
	CallJson(TEXT("GetState"), SessionRequest(SessionId), [OnDone](const FSidecarStatus& Status, const FString& Json, int64 Revision) {
		OnDone.ExecuteIfBound(Status, Json, Revision);
	});
}

void UGameSidecarSubsystem::ReplaceState(const FString& SessionId, const FString& SnapshotJson, FSidecarCallDone OnDone)
{
	const FString Request = FString::Printf(TEXT("{\"sessionId\": %s, \"snapshot\": %s}"), *JsonQuote(SessionId),
	                                        SnapshotJson.IsEmpty() ? TEXT("{}") : *SnapshotJson);
	if (!TrackedSessions.Contains(SessionId))
	{
		CallJson(TEXT("ReplaceState"), Request, [OnDone](const FSidecarStatus& Status, const FString&, int64 Revision) {
			OnDone.ExecuteIfBound(Status, Revision);
		});
		return;
	}
	WhenStarted([this, SessionId, Request, OnDone](const FSidecarStatus* Failed) {
		if (Failed != nullptr)
		{
			OnDone.ExecuteIfBound(*Failed, -1);
			return;
		}
		// Through the tracked session: its revision follows the snapshot.
		OnCallResult(game_sidecar_tracked_replace_state_async(Sidecar, ToUtf8(SessionId).c_str(), ToUtf8(Request).c_str(),
		                                                      &UGameSidecarSubsystem::Dispatch, this),
		             OnDone);
	});
}

void UGameSidecarSubsystem::ExportSession(const FString& SessionId, FSidecarExportDone OnDone)
{
	CallJson(TEXT("ExportSession"), SessionRequest(SessionId), [OnDone](const FSidecarStatus& Status, const FString& Json, int64 Revision) {
		// proto3 JSON carries bytes as base64.
		TArray<uint8> SaveData;
		if (Status.IsOk())
		{
			FBase64::Decode(GameSidecarJson::StringField(Json, TEXT("blob")), SaveData);
		}
		OnDone.ExecuteIfBound(Status, SaveData, Revision);
	});
}

void UGameSidecarSubsystem::ImportSession(const TArray<uint8>& SaveData, FSidecarCallDone OnDone)
{
	const FString Request = FString::Printf(TEXT("{\"blob\": \"%s\", \"overwrite\": true}"), *FBase64::Encode(SaveData));
	CallJson(TEXT("ImportSession"), Request, [this, OnDone](const FSidecarStatus& Status, const FString& Json, int64 Revision) {
		const FString SessionId = GameSidecarJson::StringField(Json, TEXT("sessionId"));
		if (!Status.IsOk() || Sidecar == nullptr || !TrackedSessions.Contains(SessionId))
		{
			OnDone.ExecuteIfBound(Status, Revision);
			return;
		}
		// The session was replaced whole: track it anew, at the imported revision.
		game_sidecar_untrack(Sidecar, ToUtf8(SessionId).c_str());
		Track(SessionId, [OnDone](const FSidecarStatus& Tracked, int64 TrackedRevision) {
			OnDone.ExecuteIfBound(Tracked, TrackedRevision);
		});
	});
}

void UGameSidecarSubsystem::DispatchSettled(const game_sidecar_event* Event, void* UserData)
{
	UGameSidecarSubsystem* Self = static_cast<UGameSidecarSubsystem*>(UserData);
	const FSidecarWritesSettled Settled = GameSidecarJson::WritesSettled(FromUtf8(Event->event_json));
	for (const FSidecarSettledWrite& Write : Settled.Writes)
	{
		if (Write.Outcome == ESidecarWriteOutcome::NotApplied)
		{
			UE_LOG(LogGameSidecar, Warning, TEXT("session %s: kept write %s was not applied: %s %s"), *Settled.SessionId,
			       *Write.DeltaId, *Write.Reason, *Write.Message);
		}
	}
	Self->OnWriteSettled.Broadcast(Settled);
}
