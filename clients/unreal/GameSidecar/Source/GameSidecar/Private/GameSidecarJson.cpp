#include "GameSidecarJson.h"

#include "Dom/JsonObject.h"
#include "Serialization/JsonReader.h"
#include "Serialization/JsonSerializer.h"

namespace
{
TSharedPtr<FJsonObject> Parse(const FString& Json)
{
	TSharedPtr<FJsonObject> Object;
	const TSharedRef<TJsonReader<>> Reader = TJsonReaderFactory<>::Create(Json);
	if (!FJsonSerializer::Deserialize(Reader, Object))
	{
		return nullptr;
	}
	return Object;
}

// proto3 JSON writes int64 as a string and int32 as a number; TryGetNumberField takes both.
int64 Int64Field(const TSharedPtr<FJsonObject>& Object, const TCHAR* Field)
{
	int64 Value = 0;
	Object->TryGetNumberField(Field, Value);
	return Value;
}

ESidecarWriteOutcome Outcome(const FString& Name)
{
	if (Name == TEXT("replayed")) return ESidecarWriteOutcome::Replayed;
	if (Name == TEXT("not_applied")) return ESidecarWriteOutcome::NotApplied;
	return ESidecarWriteOutcome::AppliedNow;
}
}  // namespace

namespace GameSidecarJson
{
FSidecarDecision Decision(const FString& EventJson)
{
	FSidecarDecision Decision;
	const TSharedPtr<FJsonObject> Event = Parse(EventJson);
	const TSharedPtr<FJsonObject>* Action = nullptr;
	if (!Event.IsValid() || !Event->TryGetObjectField(TEXT("action"), Action))
	{
		return Decision;
	}
	(*Action)->TryGetStringField(TEXT("actionId"), Decision.ActionId);
	Decision.Index = 0;  // proto3 JSON leaves out a zero index
	(*Action)->TryGetNumberField(TEXT("index"), Decision.Index);
	(*Action)->TryGetStringField(TEXT("message"), Decision.Line);
	const TArray<TSharedPtr<FJsonValue>>* Mentioned = nullptr;
	if ((*Action)->TryGetArrayField(TEXT("mentionedIds"), Mentioned))
	{
		for (const TSharedPtr<FJsonValue>& Id : *Mentioned)
		{
			Decision.MentionedIds.Add(Id->AsString());
		}
	}
	const TSharedPtr<FJsonObject>* Parameters = nullptr;
	if ((*Action)->TryGetObjectField(TEXT("parameters"), Parameters))
	{
		for (const TPair<FString, TSharedPtr<FJsonValue>>& Pair : (*Parameters)->Values)
		{
			Decision.Parameters.Add(Pair.Key, Pair.Value->AsString());
		}
	}
	return Decision;
}

int32 RejectedAttempt(const FString& EventJson, FString& OutReason)
{
	const TSharedPtr<FJsonObject> Event = Parse(EventJson);
	const TSharedPtr<FJsonObject>* Rejected = nullptr;
	int32 Attempt = 0;
	if (Event.IsValid() && Event->TryGetObjectField(TEXT("rejected"), Rejected))
	{
		(*Rejected)->TryGetNumberField(TEXT("attempt"), Attempt);
		(*Rejected)->TryGetStringField(TEXT("reason"), OutReason);
	}
	return Attempt;
}

FSidecarWritesSettled WritesSettled(const FString& Json)
{
	FSidecarWritesSettled Settled;
	const TSharedPtr<FJsonObject> Object = Parse(Json);
	if (!Object.IsValid())
	{
		return Settled;
	}
	Object->TryGetStringField(TEXT("sessionId"), Settled.SessionId);
	Object->TryGetBoolField(TEXT("resumed"), Settled.bResumed);
	Settled.Revision = Int64Field(Object, TEXT("revision"));
	FString Pending;
	Object->TryGetStringField(TEXT("pending"), Pending);
	if (!Pending.IsEmpty() && Pending != TEXT("none"))
	{
		FSidecarSettledWrite Write;
		Object->TryGetStringField(TEXT("pendingDeltaId"), Write.DeltaId);
		Write.Outcome = Outcome(Pending);
		// The record carries the revision after the restart, which is this batch's
		// when nothing was held behind it (set below otherwise: 0, unknown).
		Write.Revision = Settled.Revision;
		Object->TryGetStringField(TEXT("pendingReason"), Write.Reason);
		Object->TryGetStringField(TEXT("pendingMessage"), Write.Message);
		Settled.Writes.Add(Write);
	}
	const TArray<TSharedPtr<FJsonValue>>* Held = nullptr;
	if (Object->TryGetArrayField(TEXT("held"), Held) && Held->Num() > 0)
	{
		if (Settled.Writes.Num() > 0)
		{
			Settled.Writes[0].Revision = 0;
		}
		for (const TSharedPtr<FJsonValue>& Value : *Held)
		{
			const TSharedPtr<FJsonObject> Entry = Value->AsObject();
			if (!Entry.IsValid())
			{
				continue;
			}
			FSidecarSettledWrite Write;
			Entry->TryGetStringField(TEXT("deltaId"), Write.DeltaId);
			FString Name;
			Entry->TryGetStringField(TEXT("outcome"), Name);
			Write.Outcome = Outcome(Name);
			Write.Revision = Int64Field(Entry, TEXT("revision"));
			Entry->TryGetStringField(TEXT("reason"), Write.Reason);
			Entry->TryGetStringField(TEXT("message"), Write.Message);
			Settled.Writes.Add(Write);
		}
	}
	return Settled;
}

FString StringField(const FString& Json, const FString& Field)
{
	FString Value;
	const TSharedPtr<FJsonObject> Object = Parse(Json);
	if (Object.IsValid())
	{
		Object->TryGetStringField(Field, Value);
	}
	return Value;
}
}  // namespace GameSidecarJson
