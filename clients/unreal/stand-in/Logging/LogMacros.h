// STAND-IN (see CoreMinimal.h): UE_LOG and log categories.
#pragma once
#include "CoreMinimal.h"

// Logging: UE_LOG writes "Category: Verbosity: text" to stderr, as the engine's
// console does (StandInControl.h filters and hooks it).
namespace ELogVerbosity {
enum Type : uint8 { NoLogging, Fatal, Error, Warning, Display, Log, Verbose, VeryVerbose, All = VeryVerbose };
}
struct FLogCategoryStandIn {
  const char* Name;
};
extern FLogCategoryStandIn LogTemp;
#define DEFINE_LOG_CATEGORY_STATIC(Name, Default, Compiled) static FLogCategoryStandIn Name{#Name};
#define DECLARE_LOG_CATEGORY_EXTERN(Name, Default, Compiled) extern FLogCategoryStandIn Name
#define DEFINE_LOG_CATEGORY(Name) FLogCategoryStandIn Name{#Name}
namespace StandIn {
void WriteLog(const FLogCategoryStandIn& Category, ELogVerbosity::Type Verbosity, const FString& Text);
}  // namespace StandIn
#define UE_LOG(Category, Verbosity, Format, ...) \
  StandIn::WriteLog(Category, ELogVerbosity::Verbosity, FString::Printf(Format, ##__VA_ARGS__))
