// Where the sidecar under test is, how to launch it, and how to wait for a condition.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public static class TestEnv
    {
        public const string ScriptedReply = "The gate creaks open. A cold wind rushes in! Nobody speaks.";

        public static string RepoRoot { get; } = FindRoot();

        /// <summary>$GAME_SIDECAR_EXE (scripts/test points it at the frozen build), else the repo's .venv console script.</summary>
        public static string SidecarExe =>
            Environment.GetEnvironmentVariable("GAME_SIDECAR_EXE") is { Length: > 0 } exe
                ? exe
                : Path.Combine(RepoRoot, ".venv", "bin", "game-sidecar");

        /// <summary>The C++ suite's scripted-model config: the same workload for both clients.</summary>
        public static string Config => Path.Combine(RepoRoot, "clients", "cpp", "tests", "sidecar_test.toml");

        public static string Here(string file) => Path.Combine(AppContext.BaseDirectory, file);

        public static SidecarProcessOptions RealOptions(string? config = null, Action<string>? onLog = null)
        {
            return new SidecarProcessOptions
            {
                Executable = SidecarExe,
                Arguments = new List<string> { "serve", "--config", config ?? Config },
                // Generous: the machine is shared and Python start-up is CPU-bound.
                HandshakeTimeout = TimeSpan.FromSeconds(60),
                ExitGrace = TimeSpan.FromSeconds(5),
                OnLog = onLog,
            };
        }

        public static SidecarProcessOptions FakeOptions(string mode, TimeSpan? timeout = null)
        {
            return new SidecarProcessOptions
            {
                Executable = Here("fake_sidecar.sh"),
                Arguments = new List<string> { mode },
                HandshakeTimeout = timeout ?? TimeSpan.FromSeconds(30),
            };
        }

        /// <summary>Polls <paramref name="condition"/> until true or <paramref name="timeout"/> (default 30 s).</summary>
        public static async Task<bool> Eventually(Func<Task<bool>> condition, TimeSpan? timeout = null)
        {
            var deadline = Stopwatch.StartNew();
            var limit = timeout ?? TimeSpan.FromSeconds(30);
            while (true)
            {
                if (await condition()) return true;
                if (deadline.Elapsed > limit) return false;
                await Task.Delay(20);
            }
        }

        public static Task<bool> Eventually(Func<bool> condition, TimeSpan? timeout = null) =>
            Eventually(() => Task.FromResult(condition()), timeout);

        /// <summary>True while the process exists and is not a zombie (a reaped-later child counts as gone).</summary>
        public static bool Alive(int pid)
        {
            try
            {
                var stat = File.ReadAllText($"/proc/{pid}/stat");
                var state = stat.Substring(stat.LastIndexOf(')') + 2, 1);
                return state != "Z" && state != "X";
            }
            catch (IOException)
            {
                return false;
            }
            catch (UnauthorizedAccessException)
            {
                return true;
            }
        }

        public static DeltaOp Upsert(string id, EntityKind kind, string name, string location = "") =>
            new DeltaOp { UpsertEntity = new UpsertEntityOp { Entity = new Entity { Id = id, Kind = kind, Name = name, LocationId = location } } };

        public static DeltaOp Fact(string key, long value) =>
            new DeltaOp { SetSceneFact = new SetSceneFactOp { Key = key, Value = new Value { IntValue = value } } };

        public static DeltaOp[] GateScene() => new[]
        {
            Upsert("level/gate", EntityKind.Location, "the north gate"),
            Upsert("BP_Guard_C_7", EntityKind.Character, "Captain Hale", "level/gate"),
            Upsert("BP_Player_C_0", EntityKind.Player, "Wren", "level/gate"),
        };

        public static RunRequest Narrate(string sessionId, string text, string profile = "")
        {
            var request = new RunRequest { SessionId = sessionId, Profile = profile, Narrate = new NarrateInput { Text = text } };
            request.Narrate.EntityIds.Add("BP_Player_C_0");
            request.Narrate.EntityIds.Add("level/gate");
            return request;
        }

        private static string FindRoot()
        {
            var dir = new DirectoryInfo(AppContext.BaseDirectory);
            while (dir != null && !Directory.Exists(Path.Combine(dir.FullName, "proto", "sidecar", "v1"))) dir = dir.Parent;
            return dir?.FullName ?? throw new InvalidOperationException("repository root not found above " + AppContext.BaseDirectory);
        }
    }

    /// <summary>One real sidecar (scripted model) shared by the tests of a collection; each test uses its own session IDs.</summary>
    public sealed class SidecarFixture : IAsyncLifetime
    {
        public ConcurrentQueue<string> Logs { get; } = new ConcurrentQueue<string>();
        public SidecarProcess Process { get; private set; } = null!;
        public SidecarClient Client => Process.Client;

        public async Task InitializeAsync()
        {
            Process = await SidecarProcess.LaunchAsync(TestEnv.RealOptions(onLog: Logs.Enqueue));
        }

        public async Task DisposeAsync()
        {
            if (Process == null) return;
            var socketDir = Path.GetDirectoryName(Process.Handshake.Address);
            await Process.DisposeAsync();
            // Issue 20: a stopped sidecar leaves nothing in the temp folder (a failure here fails the run).
            if (Process.Handshake.IsUnix && Directory.Exists(socketDir))
                throw new InvalidOperationException($"the sidecar's socket folder {socketDir} was left behind");
        }

        /// <summary>Opens <paramref name="sessionId"/> with the gate scene applied; returns the revision.</summary>
        public async Task<long> OpenScene(string sessionId)
        {
            var opened = await Client.OpenSessionAsync(sessionId);
            var applied = await Client.ApplyDeltasAsync(sessionId, opened.Revision, TestEnv.GateScene());
            return applied.Revision;
        }
    }

    [CollectionDefinition("sidecar")]
    public sealed class SidecarCollection : ICollectionFixture<SidecarFixture> { }
}
