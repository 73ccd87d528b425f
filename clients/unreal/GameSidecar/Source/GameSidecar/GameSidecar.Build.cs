// The runtime module: a game-instance subsystem that owns the sidecar, Blueprint
// async nodes for runs, settings, and USTRUCTs for deltas and events. It talks to
// the sidecar only through game_sidecar_c.h (GameSidecarLibrary), so no gRPC,
// protobuf or abseil header is ever compiled by Unreal.
using System.IO;
using EpicGames.Core;
using UnrealBuildTool;

public class GameSidecar : ModuleRules
{
    public GameSidecar(ReadOnlyTargetRules Target) : base(Target)
    {
        PCHUsage = PCHUsageMode.UseExplicitOrSharedPCHs;
        PublicDependencyModuleNames.AddRange(new string[] { "Core", "CoreUObject", "Engine", "DeveloperSettings" });
        PrivateDependencyModuleNames.AddRange(new string[] { "Projects", "Json", "GameSidecarLibrary" });

        // The sidecar itself (scripts/package's dist/game-sidecar/ folder, built per
        // platform) goes in <Plugin>/Sidecar/<Platform>/. It is staged as non-UFS
        // files (on disk, outside the .pak: a process cannot run from a .pak), to the
        // same path under the staged plugin folder, which is where
        // UGameSidecarSubsystem looks for it at run time (IPluginManager's base dir).
        string Sidecar = Path.Combine(PluginDirectory, "Sidecar", Target.Platform.ToString());
        if (Directory.Exists(Sidecar))
        {
            foreach (string File in Directory.EnumerateFiles(Sidecar, "*", SearchOption.AllDirectories))
            {
                RuntimeDependencies.Add(File, StagedFileType.NonUFS);
            }
        }
        StageConfigFile(Target);
    }

    // The sidecar's config file (Project Settings > Plugins > Game Sidecar > Config
    // File, relative to the project folder) is read at run time from the project
    // folder, so it is staged there, on disk (non-UFS: the sidecar reads it, not
    // the engine's file system).
    private void StageConfigFile(ReadOnlyTargetRules Target)
    {
        if (Target.ProjectFile == null)
        {
            return;
        }
        ConfigHierarchy Ini = ConfigCache.ReadHierarchy(ConfigHierarchyType.Game, Target.ProjectFile.Directory, Target.Platform);
        string ConfigFile;
        if (!Ini.TryGetValue("/Script/GameSidecar.GameSidecarSettings", "ConfigFile", out ConfigFile) ||
            string.IsNullOrEmpty(ConfigFile))
        {
            return;
        }
        if (Path.IsPathRooted(ConfigFile))
        {
            return;  // one machine's file (the editor reads it there); a package needs it relative to the project
        }
        string Source = Path.Combine(Target.ProjectFile.Directory.FullName, ConfigFile);
        if (!File.Exists(Source))
        {
            throw new BuildException("GameSidecar: ConfigFile \"{0}\" (Project Settings > Plugins > Game Sidecar) " +
                                     "does not exist: {1}", ConfigFile, Source);
        }
        RuntimeDependencies.Add(Path.Combine("$(ProjectDir)", ConfigFile), StagedFileType.NonUFS);
    }
}
