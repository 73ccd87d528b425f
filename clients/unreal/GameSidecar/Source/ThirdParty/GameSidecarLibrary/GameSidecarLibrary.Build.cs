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
            RequireFiles(Lib, "game_sidecar.dll", "game_sidecar.lib");
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
            RequireFiles(Lib, "libgame_sidecar.so");
            string So = Path.Combine(Lib, "libgame_sidecar.so");
            // UBT links the .so and adds an $ORIGIN-relative RPATH to its folder;
            // the file is staged to the same relative place.
            PublicAdditionalLibraries.Add(So);
            RuntimeDependencies.Add(So);
        }
        else
        {
            throw new BuildException("GameSidecar: there is no libgame_sidecar for {0}; the plugin ships Win64 " +
                                     "and Linux (x86_64) only. Leave it out of this target (the .uplugin's " +
                                     "PlatformAllowList) or build the library for it (clients/cpp/capi).",
                                     Target.Platform);
        }
    }

    // Missing files fail the build here, with what to do, not the link (or, for a
    // delay-loaded DLL, the first call at run time).
    private void RequireFiles(string Folder, params string[] Names)
    {
        foreach (string Name in Names)
        {
            if (!File.Exists(Path.Combine(Folder, Name)))
            {
                throw new BuildException("GameSidecar: {0} is missing from {1}. This plugin folder has no library " +
                                         "for {2}: use a packaged plugin (scripts/unreal_package, which puts " +
                                         "lib/Linux there, and lib/Win64 with --win64-dir; " +
                                         "clients/cpp/capi/README.md, \"Win64\").",
                                         Name, Folder, Target.Platform);
            }
        }
    }
}
