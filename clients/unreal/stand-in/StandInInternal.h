// The stand-in engine's out-of-line half, shared by its .cpp files: the headers
// they all include, and the text helpers they all use (STAND-IN, see CoreMinimal.h).
// POSIX only: linked into the test driver (clients/unreal/checks/run/), never into a game.
#pragma once

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "CoreMinimal.h"
#include "Dom/JsonObject.h"
#include "Engine/Engine.h"
#include "Engine/GameInstance.h"
#include "Engine/World.h"
#include "HAL/FileManager.h"
#include "Interfaces/IPluginManager.h"
#include "Kismet/BlueprintAsyncActionBase.h"
#include "Misc/Base64.h"
#include "Misc/Paths.h"
#include "Serialization/JsonSerializer.h"
#include "StandInControl.h"
#include "Subsystems/GameInstanceSubsystem.h"

namespace StandInText {
inline std::string Utf8(const FString& Text) { return FTCHARToUTF8(*Text).Get(); }
inline FString FromUtf8(const std::string& Text) { return FUTF8ToTCHAR(Text.c_str()).Get(); }

// Unreal's case folding for TCHAR is ASCII's.
inline TCHAR Lower(TCHAR C) { return (C >= u'A' && C <= u'Z') ? static_cast<TCHAR>(C + 32) : C; }
inline TCHAR Upper(TCHAR C) { return (C >= u'a' && C <= u'z') ? static_cast<TCHAR>(C - 32) : C; }
inline bool SameChar(TCHAR A, TCHAR B, ESearchCase::Type Case) {
  return Case == ESearchCase::CaseSensitive ? A == B : Lower(A) == Lower(B);
}
inline bool SameSpan(const TCHAR* A, const TCHAR* B, size_t N, ESearchCase::Type Case) {
  for (size_t i = 0; i < N; ++i) if (!SameChar(A[i], B[i], Case)) return false;
  return true;
}
inline size_t Length(const TCHAR* S) { return std::char_traits<TCHAR>::length(S); }
inline bool IsSpace(TCHAR C) { return C == u' ' || C == u'\t' || C == u'\n' || C == u'\r' || C == u'\v' || C == u'\f'; }
inline bool IsSlash(TCHAR C) { return C == u'/' || C == u'\\'; }

inline void AppendUtf8(std::string& Out, uint32_t Code) {
  if (Code < 0x80) {
    Out += static_cast<char>(Code);
  } else if (Code < 0x800) {
    Out += static_cast<char>(0xC0 | (Code >> 6));
    Out += static_cast<char>(0x80 | (Code & 0x3F));
  } else if (Code < 0x10000) {
    Out += static_cast<char>(0xE0 | (Code >> 12));
    Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
    Out += static_cast<char>(0x80 | (Code & 0x3F));
  } else {
    Out += static_cast<char>(0xF0 | (Code >> 18));
    Out += static_cast<char>(0x80 | ((Code >> 12) & 0x3F));
    Out += static_cast<char>(0x80 | ((Code >> 6) & 0x3F));
    Out += static_cast<char>(0x80 | (Code & 0x3F));
  }
}
}  // namespace StandInText
