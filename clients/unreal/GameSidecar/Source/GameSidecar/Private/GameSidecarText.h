// UTF-8 (the C ABI) <-> FString (UTF-16), in one place.
#pragma once

#include <string>

#include "CoreMinimal.h"

namespace GameSidecarText
{
inline std::string ToUtf8(const FString& Text)
{
	FTCHARToUTF8 Converted(*Text);
	return std::string(Converted.Get(), Converted.Length());
}

inline FString FromUtf8(const char* Text)
{
	if (Text == nullptr || *Text == '\0')
	{
		return FString();
	}
	FUTF8ToTCHAR Converted(Text);
	return FString(Converted.Length(), Converted.Get());
}
// A JSON string literal with quotes ("..."), for the few requests sent as JSON.
inline FString JsonQuote(const FString& Text)
{
	FString Out = TEXT("\"");
	for (const TCHAR C : Text)
	{
		if (C == TEXT('"') || C == TEXT('\\'))
		{
			Out += TEXT('\\');
			Out += C;
		}
		else if (C < 0x20)
		{
			Out += FString::Printf(TEXT("\\u%04x"), static_cast<int32>(C));
		}
		else
		{
			Out += C;
		}
	}
	Out += TEXT("\"");
	return Out;
}
}  // namespace GameSidecarText
