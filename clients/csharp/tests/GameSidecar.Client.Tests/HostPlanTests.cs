// SidecarHost's decisions (SidecarHostPlan, Unity-free): the state folder under
// persistentDataPath, the environment merge, the argument list, and the stop that does
// not block the caller, with the real sidecar and a fake that ignores stdin EOF.
using System;
using System.Collections.Generic;
using System.IO;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.Unity;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class HostPlanTests
    {
        // Rooted the platform's way ("/..." here, "C:\..." on Windows), as Unity's paths are.
        private static string At(string path) =>
            Path.GetFullPath(Path.Combine(OperatingSystem.IsWindows() ? @"C:\" : "/", path));

        private static readonly string Streaming = At("game/Data/StreamingAssets");
        private static readonly string Persistent = At("home/p/.config/unity3d/Studio/Game");

        private static SidecarHostPlan Plan() => new SidecarHostPlan
        {
            StreamingAssetsPath = Streaming,
            PersistentDataPath = Persistent,
        };

        [Fact]
        public void TheStateFolderDefaultsUnderPersistentDataPath()
        {
            var plan = Plan();
            Assert.Equal(At("home/p/.config/unity3d/Studio/Game/game-sidecar"), plan.StateFolder());
            Assert.Equal(new[] { "serve", "--state-dir", At("home/p/.config/unity3d/Studio/Game/game-sidecar") }, plan.Arguments());
        }

        [Fact]
        public void ARelativeStateFolderResolvesAgainstPersistentDataPathNotTheWorkingDirectory()
        {
            var plan = Plan();
            plan.StateDirectory = "saves/sidecar";
            Assert.Equal(At("home/p/.config/unity3d/Studio/Game/saves/sidecar"), plan.StateFolder());
            plan.StateDirectory = "../shared";
            Assert.Equal(At("home/p/.config/unity3d/Studio/shared"), plan.StateFolder());
            plan.StateDirectory = At("srv/state");
            Assert.Equal(At("srv/state"), plan.StateFolder());
            plan.PersistState = false;
            Assert.Null(plan.StateFolder());
            Assert.DoesNotContain("--state-dir", plan.Arguments());
        }

        [Fact]
        public void TheArgumentListCarriesListenConfigStateLogLevelThenExtras()
        {
            var plan = Plan();
            plan.IsWindows = true;
            plan.ConfigPath = "sidecar.toml";
            plan.LogLevel = SidecarLogLevel.Debug;
            plan.ExtraArguments = new List<string> { "--no-stdin-watch", "", "--parent-pid", "42" };
            Assert.Equal(new[]
            {
                "serve", "--listen", "tcp://127.0.0.1:0",
                "--config", Path.Combine(Streaming, "sidecar.toml"),
                "--state-dir", At("home/p/.config/unity3d/Studio/Game/game-sidecar"),
                "--log-level", "debug",
                "--no-stdin-watch", "--parent-pid", "42",
            }, plan.Arguments());
            Assert.Equal(Path.Combine(Streaming, "game-sidecar", "game-sidecar.exe"), plan.Executable());
            plan.IsWindows = false;
            Assert.Equal(Path.Combine(Streaming, "game-sidecar", "game-sidecar"), plan.Executable());
            plan.ExecutablePath = At("opt/sidecar");
            Assert.Equal(At("opt/sidecar"), plan.Executable());
            plan.ConfigPath = At("etc/sidecar.toml");
            Assert.Contains(At("etc/sidecar.toml"), plan.Arguments());
        }

        [Fact]
        public void TheEnvironmentMergesTheInspectorListThenTheCodeHookAndDropsReservedNames()
        {
            var plan = Plan();
            plan.Environment = new List<EnvironmentVariable>
            {
                new EnvironmentVariable("OPENAI_API_KEY", "from-inspector"),
                new EnvironmentVariable(" HTTPS_PROXY ", "http://proxy:3128"),
                new EnvironmentVariable("", "orphan value"),
                new EnvironmentVariable("GAME_SIDECAR_TOKEN", "leaked"),
                new EnvironmentVariable("MODE", "a"),
                new EnvironmentVariable("MODE", "b"),
            };
            plan.ConfigureEnvironment = env =>
            {
                env["OPENAI_API_KEY"] = "from-code";
                env["ANTHROPIC_API_KEY"] = "k2";
                env.Remove("HTTPS_PROXY");
                env["GAME_SIDECAR_MAGIC"] = "other";
            };
            var warnings = new List<string>();
            var options = plan.ToOptions(warnings);
            Assert.Equal(new Dictionary<string, string>
            {
                { "OPENAI_API_KEY", "from-code" },
                { "ANTHROPIC_API_KEY", "k2" },
                { "MODE", "b" },
            }, options.Environment);
            Assert.Equal(4, warnings.Count);
            Assert.Contains(warnings, w => w.Contains("no name"));
            Assert.Contains(warnings, w => w.Contains("MODE is set twice"));
            Assert.Contains(warnings, w => w.Contains("GAME_SIDECAR_TOKEN"));
            Assert.Contains(warnings, w => w.Contains("GAME_SIDECAR_MAGIC"));
        }

        [Fact]
        public async Task TheEnvironmentAndLogLevelReachTheRealSidecar()
        {
            var state = Path.Combine(Path.GetTempPath(), "gs-plan-" + Guid.NewGuid().ToString("N"));
            var plan = new SidecarHostPlan
            {
                ExecutablePath = TestEnv.SidecarExe,
                ConfigPath = TestEnv.Config,
                PersistentDataPath = state,
                LogLevel = SidecarLogLevel.Debug,
                ConfigureEnvironment = env => env["GAME_SIDECAR_PLAN_TEST"] = "1",
            };
            var logs = new System.Collections.Concurrent.ConcurrentQueue<string>();
            var options = plan.ToOptions(new List<string>());
            options.HandshakeTimeout = TimeSpan.FromSeconds(60);
            options.OnLog = logs.Enqueue;
            try
            {
                await using (var process = await SidecarProcess.LaunchAsync(options))
                {
                    await process.Client.OpenSessionAsync("plan");
                    // The default state folder was made under persistentDataPath and holds the journal.
                    Assert.True(Directory.Exists(Path.Combine(state, SidecarHostPlan.DefaultStateFolderName)));
                    Assert.NotEmpty(Directory.GetFiles(Path.Combine(state, SidecarHostPlan.DefaultStateFolderName), "*", SearchOption.AllDirectories));
                }
                Assert.Contains(logs, l => l.Contains("\"debug\""));
            }
            finally
            {
                if (Directory.Exists(state)) Directory.Delete(state, recursive: true);
            }
        }

        [Fact]
        public async Task StopInBackgroundReturnsBeforeTheStopEndsAndTheStopStillHappens()
        {
            // The fake ignores stdin EOF, so a stop lasts the whole ExitGrace before SIGTERM: the old
            // SidecarHost held the main thread for all of it (StopAsync().Wait(3 s)).
            var options = TestEnv.FakeOptions("ignore-eof");
            options.ExitGrace = TimeSpan.FromSeconds(5);
            options.HangTimeout = TimeSpan.Zero;
            var process = await SidecarProcess.LaunchAsync(options);
            var pid = process.Pid;
            var stop = SidecarHostPlan.StopInBackground(process);
            Assert.False(stop.IsCompleted);
            Assert.True(TestEnv.Alive(pid));
            var exit = await stop;
            Assert.True(exit.Requested);
            Assert.True(await TestEnv.Eventually(() => !TestEnv.Alive(pid)));
        }

        [Fact]
        public async Task TheQuitStopWaitsOnlyItsBoundAndTheStopGoesOn()
        {
            var options = TestEnv.FakeOptions("ignore-eof");
            options.ExitGrace = TimeSpan.FromSeconds(5);
            options.HangTimeout = TimeSpan.Zero;
            var process = await SidecarProcess.LaunchAsync(options);
            var pid = process.Pid;
            Assert.False(SidecarHostPlan.StopBounded(process, TimeSpan.FromMilliseconds(200))); // not gone within the bound
            var exit = await process.StopAsync();  // the same stop, still running: it ends with the kill
            Assert.True(exit.Requested);
            Assert.False(TestEnv.Alive(pid));

            var real = await SidecarProcess.LaunchAsync(TestEnv.RealOptions());
            Assert.True(SidecarHostPlan.StopBounded(real, TimeSpan.FromSeconds(30))); // a sidecar exits on EOF
            Assert.True((await real.Exited).Requested);
        }
    }
}
