#include "GameSidecarOps.h"

#include "GameSidecarText.h"

THIRD_PARTY_INCLUDES_START
#include "game_sidecar_c.h"
THIRD_PARTY_INCLUDES_END

using GameSidecarText::JsonQuote;
using GameSidecarText::ToUtf8;

namespace
{
const char* KindName(ESidecarEntityKind Kind)
{
	switch (Kind)
	{
	case ESidecarEntityKind::Character: return "CHARACTER";
	case ESidecarEntityKind::Location: return "LOCATION";
	case ESidecarEntityKind::Item: return "ITEM";
	case ESidecarEntityKind::Faction: return "FACTION";
	case ESidecarEntityKind::Player: return "PLAYER";
	case ESidecarEntityKind::Other: return "OTHER";
	}
	return "OTHER";
}

const TCHAR* VisibilityName(ESidecarVisibility Visibility)
{
	switch (Visibility)
	{
	case ESidecarVisibility::Public: return TEXT("VISIBILITY_LEVEL_PUBLIC");
	case ESidecarVisibility::KnownTo: return TEXT("VISIBILITY_LEVEL_KNOWN_TO");
	case ESidecarVisibility::Private: return TEXT("VISIBILITY_LEVEL_PRIVATE");
	case ESidecarVisibility::Hidden: return TEXT("VISIBILITY_LEVEL_HIDDEN");
	}
	return TEXT("VISIBILITY_LEVEL_PUBLIC");
}

FString QuotedList(const TArray<FString>& Items)
{
	FString Out = TEXT("[");
	for (int32 i = 0; i < Items.Num(); ++i)
	{
		Out += (i > 0 ? TEXT(", ") : TEXT("")) + JsonQuote(Items[i]);
	}
	return Out + TEXT("]");
}

FString QuotedMap(const TMap<FString, FString>& Items)
{
	FString Out = TEXT("{");
	bool bFirst = true;
	for (const TPair<FString, FString>& Pair : Items)
	{
		Out += (bFirst ? TEXT("") : TEXT(", ")) + JsonQuote(Pair.Key) + TEXT(": ") + JsonQuote(Pair.Value);
		bFirst = false;
	}
	return Out + TEXT("}");
}

// A number as JSON: Printf's %f is locale-independent in Unreal (and here).
FString Number(float Value) { return FString::Printf(TEXT("%f"), static_cast<double>(Value)); }
}  // namespace

namespace GameSidecarOps
{
FString PersonaOp(const FSidecarPersona& P)
{
	FString Source;
	if (!P.TemplateName.IsEmpty())
	{
		Source = TEXT("\"templateName\": ") + JsonQuote(P.TemplateName);
	}
	else
	{
		Source = TEXT("\"inlineTemplate\": {\"identity\": ") + JsonQuote(P.Identity) + TEXT(", \"inviolableRules\": ") +
		         QuotedList(P.InviolableRules) + TEXT(", \"moodModifiers\": ") + QuotedMap(P.MoodModifiers) +
		         TEXT(", \"reminder\": ") + JsonQuote(P.Reminder) + TEXT("}");
	}
	return TEXT("{\"setPersona\": {\"persona\": {\"actorId\": ") + JsonQuote(P.ActorId) + TEXT(", ") + Source +
	       TEXT(", \"slots\": ") + QuotedMap(P.Slots) + TEXT("}}}");
}

FString MoodOp(const FSidecarMood& M)
{
	return TEXT("{\"setMood\": {\"actorId\": ") + JsonQuote(M.ActorId) + TEXT(", \"pad\": {\"pleasure\": ") +
	       Number(M.Pleasure) + TEXT(", \"arousal\": ") + Number(M.Arousal) + TEXT(", \"dominance\": ") +
	       Number(M.Dominance) + TEXT("}}}");
}

FString MemoryOp(const FSidecarMemory& M)
{
	return TEXT("{\"recordMemory\": {\"memory\": {\"actorId\": ") + JsonQuote(M.ActorId) + TEXT(", \"text\": ") +
	       JsonQuote(M.Text) + TEXT("}}}");
}

FString LoreCardOp(const FSidecarLoreCard& C)
{
	return TEXT("{\"upsertLoreCard\": {\"card\": {\"id\": ") + JsonQuote(C.Id) + TEXT(", \"title\": ") + JsonQuote(C.Title) +
	       TEXT(", \"text\": ") + JsonQuote(C.Text) + TEXT(", \"triggers\": ") + QuotedList(C.Triggers) +
	       TEXT(", \"visibility\": {\"level\": \"") + VisibilityName(C.Visibility) + TEXT("\", \"knownTo\": ") +
	       QuotedList(C.KnownTo) + TEXT("}}}}");
}

FString AddToBatch(game_sidecar_batch* B, const FSidecarDeltaBatch& Batch)
{
	for (const FSidecarEntity& E : Batch.Upserts)
	{
		if (game_sidecar_batch_upsert_entity(B, ToUtf8(E.Id).c_str(), KindName(E.Kind), ToUtf8(E.Name).c_str(),
		                                     ToUtf8(E.Description).c_str(), ToUtf8(E.LocationId).c_str()) != 0)
			return FString::Printf(TEXT("upsert of entity \"%s\" (an empty ID?)"), *E.Id);
	}
	for (const FSidecarFieldChange& F : Batch.FieldChanges)
	{
		const std::string Value = ToUtf8(F.Value);
		if (game_sidecar_batch_set_field(B, ToUtf8(F.EntityId).c_str(), ToUtf8(F.Field).c_str(),
		                                 F.bRemove ? nullptr : Value.c_str()) != 0)
			return FString::Printf(TEXT("field change %s.%s"), *F.EntityId, *F.Field);
	}
	for (const FSidecarGameEvent& E : Batch.Events)
	{
		if (game_sidecar_batch_record_event(B, ToUtf8(E.Text).c_str(), ToUtf8(E.ActorId).c_str(),
		                                    ToUtf8(E.LocationId).c_str()) != 0)
			return TEXT("an event with empty text");
	}
	for (const FSidecarSceneFact& F : Batch.SceneFacts)
	{
		const std::string Value = ToUtf8(F.Value);
		if (game_sidecar_batch_set_scene_fact(B, ToUtf8(F.Key).c_str(), F.bRemove ? nullptr : Value.c_str()) != 0)
			return TEXT("a scene fact with an empty key");
	}
	// The typed ops go as their JSON; the sidecar checks them as it checks any op.
	TArray<FString> Json;
	for (const FSidecarPersona& P : Batch.Personas) Json.Add(PersonaOp(P));
	for (const FSidecarMood& M : Batch.Moods) Json.Add(MoodOp(M));
	for (const FSidecarMemory& M : Batch.Memories) Json.Add(MemoryOp(M));
	for (const FSidecarLoreCard& C : Batch.LoreCards) Json.Add(LoreCardOp(C));
	for (const FString& Extra : Batch.ExtraOpsJson) Json.Add(Extra);
	for (const FString& Id : Batch.RemoveLoreCardIds)
		Json.Add(TEXT("{\"removeLoreCard\": {\"id\": ") + JsonQuote(Id) + TEXT("}}"));
	for (const FString& Op : Json)
	{
		if (game_sidecar_batch_add_json(B, ToUtf8(Op).c_str()) != 0)
			return FString::Printf(TEXT("op %s"), *Op);
	}
	for (const FString& Id : Batch.RemoveEntityIds)
	{
		if (game_sidecar_batch_remove_entity(B, ToUtf8(Id).c_str()) != 0)
			return TEXT("a removal with an empty ID");
	}
	return FString();
}

FString RunRequestJson(const FRunSpec& S)
{
	FString Input;
	if (S.Kind == TEXT("narrate"))
	{
		Input = TEXT("{\"text\": ") + JsonQuote(S.Text) + TEXT(", \"entityIds\": ") + QuotedList(S.EntityIds) + TEXT("}");
	}
	else if (S.Kind == TEXT("dialogue"))
	{
		Input = TEXT("{\"speakerId\": ") + JsonQuote(S.SpeakerId) + TEXT(", \"text\": ") + JsonQuote(S.Text) + TEXT("}");
	}
	else if (S.Kind == TEXT("decision"))
	{
		FString Options = TEXT("[");
		for (int32 i = 0; i < S.Options.Num(); ++i)
		{
			const FSidecarActionOption& O = S.Options[i];
			Options += (i > 0 ? TEXT(", ") : TEXT("")) + FString(TEXT("{\"actionId\": ")) + JsonQuote(O.ActionId) +
			           TEXT(", \"label\": ") + JsonQuote(O.Label) + TEXT(", \"targetId\": ") + JsonQuote(O.TargetId) +
			           TEXT(", \"parametersSchema\": ") + JsonQuote(O.ParametersSchema) + TEXT("}");
		}
		Input = TEXT("{\"situation\": ") + JsonQuote(S.Text) + TEXT(", \"options\": ") + Options +
		        FString::Printf(TEXT("], \"maxAttempts\": %d}"), S.MaxAttempts);
	}
	else if (S.Kind == TEXT("describe"))
	{
		Input = TEXT("{\"entityId\": ") + JsonQuote(S.EntityId) + TEXT(", \"aspect\": ") + JsonQuote(S.Aspect) + TEXT("}");
	}
	else
	{
		Input = TEXT("{}");  // continueStory
	}
	return TEXT("{\"sessionId\": ") + JsonQuote(S.SessionId) + TEXT(", \"actorId\": ") + JsonQuote(S.ActorId) + TEXT(", \"") +
	       S.Kind + TEXT("\": ") + Input + TEXT(", \"focusIds\": ") + QuotedList(S.FocusIds) + TEXT(", \"profile\": ") +
	       JsonQuote(S.Profile) + TEXT("}");
}
}  // namespace GameSidecarOps
