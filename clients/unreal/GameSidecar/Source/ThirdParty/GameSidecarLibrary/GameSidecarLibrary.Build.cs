// The prebuilt client library (libgame_sidecar): one shared library with gRPC,
// protobuf and abseil linked inside and hidden, plus its plain C header. Nothing
// here is compiled with Unreal's toolchain, so no gRPC build per platform.
//
//   include/game_sidecar_c.h
//   lib/Linux/x86_64-unknown-linux-gnu/libgame_sidecar.so   (scripts/unreal_package)
//   lib/Win64/game_sidecar.dll + game_sidecar.lib           (the Windows CI workflow)
using System.IO;
using UnrealBuildTool;

public class GameSidecarLibrary : ModuleRules
{
    public GameSidecarLibrary(ReadOnlyTargetRules Target) : base(Target)
    {
        Type = ModuleType.External;
        PublicSystemIncludePaths.Add(Path.Combine(ModuleDirectory, "include"));

        if (Target.Platform == UnrealTargetPlatform.Win64)
        {
            string Lib = Path.Combine(ModuleDirectory, "lib", "Win64");
            PublicAdditionalLibraries.Add(Path.Combine(Lib, "game_sidecar.lib"));   // import library
            // Loaded on first use (FGameSidecarModule::StartupModule loads it from
            // the staged path), so the editor starts even when the DLL is missing.
            PublicDelayLoadDLLs.Add("game_sidecar.dll");
            RuntimeDependencies.Add("$(BinaryOutputDir)/game_sidecar.dll", Path.Combine(Lib, "game_sidecar.dll"));
            PublicDefinitions.Add("GAME_SIDECAR_DLL_NAME=TEXT(\"game_sidecar.dll\")");
        }
        else if (Target.Platform == UnrealTargetPlatform.Linux)
        {
            string Lib = Path.Combine(ModuleDirectory, "lib", "Linux", "x86_64-unknown-linux-gnu");
            string So = Path.Combine(Lib, "libgame_sidecar.so");
            // UBT links the .so and adds an $ORIGIN-relative RPATH to its folder;
            // the file is staged to the same relative place.
            PublicAdditionalLibraries.Add(So);
            RuntimeDependencies.Add(So);
        }
    }
}
