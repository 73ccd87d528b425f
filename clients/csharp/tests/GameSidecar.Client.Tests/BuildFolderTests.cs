// The Unity Editor build step's decisions (clients/unity/Editor/SidecarBuildFolders.cs,
// compiled into this suite; the Unity half is compile-checked against stand-ins):
// which folder a desktop build ships, where it lands, and the messages that stop a
// build that cannot ship it. Real folders in a temp directory.
using System;
using System.Collections;
using System.Collections.Generic;
using System.IO;
using GameSidecar.Editor;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public sealed class BuildFolderTests : IDisposable
    {
        private readonly string _root = Path.Combine(Path.GetTempPath(), "gs-build-" + Guid.NewGuid().ToString("N"));
        private static readonly IDictionary NoEnv = new Dictionary<string, string>();

        public BuildFolderTests() => Directory.CreateDirectory(Path.Combine(_root, "ProjectSettings"));
        public void Dispose() => Directory.Delete(_root, recursive: true);

        private string Sidecar(string name, string exe)
        {
            var dir = Path.Combine(_root, name);
            Directory.CreateDirectory(Path.Combine(dir, "_internal"));
            File.WriteAllText(Path.Combine(dir, exe), "exe");
            File.WriteAllText(Path.Combine(dir, "_internal", "lib.so"), "lib");
            return dir;
        }

        private void Settings(string json) => File.WriteAllText(Path.Combine(_root, SidecarBuildFolders.SettingsFile), json);

        [Fact]
        public void AWindowsBuildGetsTheWindowsFolderBesideItsDataFolder()
        {
            Sidecar("win", "game-sidecar.exe");
            Sidecar("linux", "game-sidecar");
            Settings("{\"StandaloneWindows64\": \"win\", \"StandaloneLinux64\": \"linux\"}");
            var output = Path.Combine(_root, "Build", "MyGame.exe");
            var to = SidecarBuildFolders.CopyInto(_root, "StandaloneWindows64", output, NoEnv);
            Assert.Equal(Path.Combine(_root, "Build", "MyGame_Data", "StreamingAssets", "game-sidecar"), to);
            Assert.True(File.Exists(Path.Combine(to, "game-sidecar.exe")));
            Assert.True(File.Exists(Path.Combine(to, "_internal", "lib.so")));
        }

        [Fact]
        public void ARebuildReplacesTheEarlierCopyAndAMacBuildGoesInsideTheApp()
        {
            var linux = Sidecar("linux", "game-sidecar");
            Settings("{\"StandaloneLinux64\": \"linux\", \"StandaloneOSX\": \"linux\"}");
            var output = Path.Combine(_root, "Build", "MyGame.x86_64");
            var first = SidecarBuildFolders.CopyInto(_root, "StandaloneLinux64", output, NoEnv);
            File.WriteAllText(Path.Combine(first, "stale.txt"), "from an older build");
            File.Delete(Path.Combine(linux, "_internal", "lib.so"));
            var second = SidecarBuildFolders.CopyInto(_root, "StandaloneLinux64", output, NoEnv);
            Assert.Equal(first, second);
            Assert.False(File.Exists(Path.Combine(second, "stale.txt")));
            Assert.False(File.Exists(Path.Combine(second, "_internal", "lib.so")));
            var mac = SidecarBuildFolders.CopyInto(_root, "StandaloneOSX", Path.Combine(_root, "Build", "MyGame.app"), NoEnv);
            Assert.Equal(Path.Combine(_root, "Build", "MyGame.app", "Contents", "Resources", "Data", "StreamingAssets", "game-sidecar"), mac);
        }

        [Fact]
        public void TheEnvironmentOverridesTheSettingsFile()
        {
            Sidecar("from-file", "game-sidecar");
            var fromEnv = Sidecar("from-env", "game-sidecar");
            Settings("{\"StandaloneLinux64\": \"from-file\"}");
            var env = new Dictionary<string, string> { ["GAME_SIDECAR_BUILD_FOLDER_STANDALONELINUX64"] = fromEnv };
            Assert.Equal(fromEnv, SidecarBuildFolders.SourceFor(_root, "StandaloneLinux64", env));
        }

        [Fact]
        public void NoFolderForTheTargetStopsTheBuildNamingWhatToSet()
        {
            Sidecar("linux", "game-sidecar");
            Settings("{\"StandaloneLinux64\": \"linux\"}");
            var e = Assert.Throws<SidecarBuildException>(() => SidecarBuildFolders.SourceFor(_root, "StandaloneWindows64", NoEnv));
            Assert.Contains("no sidecar folder is configured for StandaloneWindows64", e.Message);
            Assert.Contains("ProjectSettings/GameSidecarBuild.json", e.Message);
            Assert.Contains("GAME_SIDECAR_BUILD_FOLDER_STANDALONEWINDOWS64", e.Message);
            File.Delete(Path.Combine(_root, SidecarBuildFolders.SettingsFile));
            Assert.Throws<SidecarBuildException>(() => SidecarBuildFolders.SourceFor(_root, "StandaloneLinux64", NoEnv));
        }

        [Fact]
        public void AFolderWithoutTheTargetsExecutableIsRefused()
        {
            Sidecar("linux", "game-sidecar");
            Settings("{\"StandaloneWindows64\": \"linux\"}");  // a Linux folder for a Windows build
            var e = Assert.Throws<SidecarBuildException>(() => SidecarBuildFolders.SourceFor(_root, "StandaloneWindows64", NoEnv));
            Assert.Contains("has no game-sidecar.exe", e.Message);
        }

        [Theory]
        [InlineData("Android")]
        [InlineData("iOS")]
        [InlineData("WebGL")]
        public void NonDesktopPlayersAreToldTheyCannotRunTheSidecar(string target)
        {
            var e = Assert.Throws<SidecarBuildException>(() => SidecarBuildFolders.SourceFor(_root, target, NoEnv));
            Assert.Contains("only desktop players", e.Message);
        }

        [Fact]
        public void ASettingsFileThatIsNotJsonIsNamed()
        {
            Settings("StandaloneLinux64 = linux");
            var e = Assert.Throws<SidecarBuildException>(() => SidecarBuildFolders.SourceFor(_root, "StandaloneLinux64", NoEnv));
            Assert.Contains("is not a JSON object", e.Message);
        }
    }
}
