// Where the sidecar under test is, how to launch it, and how to wait for a condition.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Text;
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

        /// <summary>
        /// This run is a Windows program (scripts/test_windows runs the suite under Wine): the
        /// launcher's default transport is TCP loopback there, the fake sidecar is fake_sidecar.exe,
        /// and the real sidecar is the Linux one behind tests/wine/sidecar_relay.exe.
        /// </summary>
        public static bool IsWindows { get; } = OperatingSystem.IsWindows();

        public const int SigKill = 9;
        public const int SigStop = 19;

        /// <summary>
        /// Sends POSIX signal <paramref name="signal"/> to the sidecar with pid <paramref name="pid"/>; 0 when sent.
        /// On Windows, SIGKILL is what a crash is there: TerminateProcess (Process.Kill) of the relay,
        /// whose host then SIGKILLs the Linux sidecar. Any other signal (SIGSTOP: Windows has none)
        /// goes to the Linux sidecar behind the relay through relay_host.py's control frame.
        /// </summary>
        public static int Signal(int pid, int signal)
        {
            if (!IsWindows) return NativeKill(pid, signal);
            if (signal == SigKill)
            {
                using var process = Process.GetProcessById(pid);
                process.Kill();
                return 0;
            }
            RelayControl('s', pid + " " + signal);
            return 0;
        }

        /// <summary>
        /// The pid the sidecar launched as <paramref name="pid"/> reports in GetInfo: the same on POSIX;
        /// on Windows the Linux pid of the sidecar behind the relay (asked of relay_host.py), where a
        /// Windows sidecar would report the pid the launcher holds.
        /// </summary>
        public static int ServingPid(int pid) => IsWindows ? RelayControl('q', pid.ToString()) : pid;

        /// <summary>One control call to tests/wine/relay_host.py (frames in its docstring); its answer.</summary>
        private static int RelayControl(char kind, string body)
        {
            var port = Environment.GetEnvironmentVariable("GAME_SIDECAR_RELAY_PORT");
            if (string.IsNullOrEmpty(port))
                throw new InvalidOperationException("this test on Windows needs the relay host (GAME_SIDECAR_RELAY_PORT; scripts/test_windows sets it)");
            using var tcp = new TcpClient("127.0.0.1", int.Parse(port));
            var stream = tcp.GetStream();
            var bytes = Encoding.ASCII.GetBytes(body);
            var head = new byte[] { (byte)kind, 0, 0, 0, (byte)bytes.Length };
            stream.Write(head, 0, head.Length);
            stream.Write(bytes, 0, bytes.Length);
            // Frames back: 'e' (why not) on failure, then 'x' with the answer ("-1": failed).
            var why = "";
            while (true)
            {
                var frame = ReadExactly(stream, 5);
                var data = Encoding.UTF8.GetString(ReadExactly(stream, (frame[1] << 24) | (frame[2] << 16) | (frame[3] << 8) | frame[4]));
                if (frame[0] == (byte)'e') why += data;
                else if (frame[0] == (byte)'x')
                {
                    var answer = int.Parse(data);
                    return answer >= 0 ? answer : throw new InvalidOperationException(why.Trim());
                }
            }
        }

        private static byte[] ReadExactly(Stream stream, int count)
        {
            var buffer = new byte[count];
            stream.ReadExactly(buffer, 0, count);
            return buffer;
        }

        [DllImport("libc", EntryPoint = "kill", SetLastError = true)]
        private static extern int NativeKill(int pid, int signal);

        /// <summary>
        /// A process the test killed (SIGKILL) ended as such: on POSIX, signaled by 9 with no exit code;
        /// on Windows a killed process has only an exit code (TerminateProcess's, -1 from Process.Kill).
        /// </summary>
        public static void AssertKilledFromOutside(SidecarExit exit)
        {
            Assert.False(exit.Requested);
            Assert.False(exit.Hung);
            if (IsWindows)
            {
                Assert.Equal(SidecarExitKind.Exited, exit.Kind);
                Assert.Null(exit.Signal);
                Assert.Equal(-1, exit.ExitCode);
                Assert.Contains("exited with code -1, not requested", exit.ToString());
            }
            else
            {
                Assert.Equal(SidecarExitKind.Signaled, exit.Kind);
                Assert.Equal(SigKill, exit.Signal);
                Assert.Null(exit.ExitCode);
                Assert.Contains("killed by signal 9 (SIGKILL), not requested", exit.ToString());
            }
        }

        /// <summary>
        /// The stand-in game for the orphan test, started with <paramref name="args"/>: `dotnet HostHelper.dll`
        /// here, HostHelper.exe (published for win-x64 by scripts/test_windows) on Windows.
        /// </summary>
        public static ProcessStartInfo HostHelper(params string[] args)
        {
            var helper = IsWindows ? Here(Path.Combine("host-helper", "HostHelper.exe")) : Here("HostHelper.dll");
            Assert.True(File.Exists(helper), helper + " is missing");
            var info = new ProcessStartInfo(IsWindows ? helper : "dotnet") { RedirectStandardOutput = true, UseShellExecute = false };
            if (!IsWindows) info.ArgumentList.Add(helper);
            foreach (var arg in args) info.ArgumentList.Add(arg);
            return info;
        }

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
                Executable = Here(IsWindows ? "fake_sidecar.exe" : "fake_sidecar.sh"),
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
            if (IsWindows)
            {
                // No /proc: ask the OS through .NET (an exited process's handle reports HasExited).
                try
                {
                    using var process = Process.GetProcessById(pid);
                    return !process.HasExited;
                }
                catch (Exception e) when (e is ArgumentException || e is InvalidOperationException)
                {
                    return false;
                }
            }
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
