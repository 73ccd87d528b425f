#nullable enable
// Which sidecar folder goes into a player build, and where: the Unity-free half of
// SidecarBuildStep (no UnityEditor type here, so the xunit suite tests it on real
// folders). A build for a desktop target copies the configured folder (the output of
// scripts/package made on that OS) to the player's StreamingAssets/game-sidecar/,
// where SidecarHost looks for it.
using System;
using System.Collections;
using System.Collections.Generic;
using System.IO;
using GameSidecar.Client;

namespace GameSidecar.Editor
{
    /// <summary>A build that cannot ship the sidecar; the message says what to set.</summary>
    public sealed class SidecarBuildException : Exception
    {
        /// <summary>Creates the exception with the message shown in the build's error.</summary>
        public SidecarBuildException(string message) : base(message) { }
    }

    /// <summary>Resolves, checks and copies the sidecar folder for a player build.</summary>
    public static class SidecarBuildFolders
    {
        /// <summary>The settings file, relative to the Unity project's root: a JSON object
        /// from a build target's name (<c>StandaloneWindows64</c>, <c>StandaloneOSX</c>,
        /// <c>StandaloneLinux64</c>) to the sidecar folder for it, absolute or relative to the project.</summary>
        public const string SettingsFile = "ProjectSettings/GameSidecarBuild.json";
        /// <summary>An environment variable <c>GAME_SIDECAR_BUILD_FOLDER_&lt;TARGET&gt;</c> overrides the file (CI builds).</summary>
        public const string EnvPrefix = "GAME_SIDECAR_BUILD_FOLDER_";
        /// <summary>The folder name under StreamingAssets, as SidecarHost expects it.</summary>
        public const string FolderName = "game-sidecar";

        private static readonly HashSet<string> Desktop = new HashSet<string>(StringComparer.Ordinal)
        {
            "StandaloneWindows", "StandaloneWindows64", "StandaloneOSX", "StandaloneLinux64",
        };

        /// <summary>True for the targets that can run a child process (desktop players).</summary>
        public static bool IsDesktop(string target) => Desktop.Contains(target);

        /// <summary>The checked source folder for <paramref name="target"/>, or a
        /// SidecarBuildException naming what to set.</summary>
        public static string SourceFor(string projectRoot, string target, IDictionary environment)
        {
            if (!IsDesktop(target))
                throw new SidecarBuildException(
                    $"game-sidecar: {target} players cannot ship the sidecar: it runs as a child process, which only " +
                    "desktop players (Windows, macOS, Linux) can start. Build for a desktop target, or remove the package from this build.");
            var configured = environment[EnvPrefix + target.ToUpperInvariant()] as string;
            var settings = Path.Combine(projectRoot, SettingsFile);
            if (string.IsNullOrEmpty(configured) && File.Exists(settings))
            {
                Dictionary<string, object?> entries;
                try { entries = FlatJson.ParseObject(File.ReadAllText(settings)); }
                catch (FormatException e) { throw new SidecarBuildException($"game-sidecar: {SettingsFile} is not a JSON object: {e.Message}"); }
                configured = entries.TryGetValue(target, out var value) ? value as string : null;
            }
            if (string.IsNullOrEmpty(configured))
                throw new SidecarBuildException(
                    $"game-sidecar: no sidecar folder is configured for {target}. Set \"{target}\": \"<folder>\" in {SettingsFile} " +
                    $"(or the variable {EnvPrefix}{target.ToUpperInvariant()}) to the folder scripts/package builds on that OS (dist/game-sidecar).");
            var folder = Path.GetFullPath(Path.Combine(projectRoot, configured));
            var exe = Path.Combine(folder, ExecutableName(target));
            if (!File.Exists(exe))
                throw new SidecarBuildException(
                    $"game-sidecar: the sidecar folder for {target} ({folder}) has no {ExecutableName(target)}: " +
                    "point it at the output of scripts/package built on that OS.");
            return folder;
        }

        /// <summary>The sidecar's executable name on <paramref name="target"/>'s OS.</summary>
        public static string ExecutableName(string target) =>
            target.StartsWith("StandaloneWindows", StringComparison.Ordinal) ? "game-sidecar.exe" : "game-sidecar";

        /// <summary>The player's StreamingAssets folder for a build written to <paramref name="outputPath"/>
        /// (the .exe, the Linux executable, or the macOS .app).</summary>
        public static string StreamingAssetsOf(string target, string outputPath)
        {
            if (target == "StandaloneOSX")
                return Path.Combine(outputPath, "Contents", "Resources", "Data", "StreamingAssets");
            var dir = Path.GetDirectoryName(Path.GetFullPath(outputPath)) ?? ".";
            var name = Path.GetFileNameWithoutExtension(outputPath);
            return Path.Combine(dir, name + "_Data", "StreamingAssets");
        }

        /// <summary>Copies the folder for <paramref name="target"/> into the build at
        /// <paramref name="outputPath"/>, replacing an earlier copy; returns the destination.</summary>
        public static string CopyInto(string projectRoot, string target, string outputPath, IDictionary environment)
        {
            var source = SourceFor(projectRoot, target, environment);
            var destination = Path.Combine(StreamingAssetsOf(target, outputPath), FolderName);
            if (Directory.Exists(destination)) Directory.Delete(destination, recursive: true);
            CopyTree(source, destination);
            return destination;
        }

        private static void CopyTree(string source, string destination)
        {
            Directory.CreateDirectory(destination);
            foreach (var file in Directory.GetFiles(source))
                File.Copy(file, Path.Combine(destination, Path.GetFileName(file)), overwrite: true);
            foreach (var dir in Directory.GetDirectories(source))
                CopyTree(dir, Path.Combine(destination, Path.GetFileName(dir)));
        }
    }
}
