// Launch failures against a fake sidecar script, and the lifeline/stop behaviour.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class LaunchTests
    {
        [Fact]
        public async Task ExitBeforeHandshakeCarriesTheExitCodeAndStderrTail()
        {
            var e = await Assert.ThrowsAsync<SidecarExitedBeforeHandshakeException>(
                () => SidecarProcess.LaunchAsync(TestEnv.FakeOptions("exit-early")));
            Assert.Equal(1, e.ExitCode);
            Assert.Contains("cannot load config (fake)", e.StderrTail);
            Assert.Contains("exit code 1", e.Message);
        }

        [Fact]
        public async Task ExitCode3IsTheStateDirLock()
        {
            var e = await Assert.ThrowsAsync<SidecarStateDirLockedException>(
                () => SidecarProcess.LaunchAsync(TestEnv.FakeOptions("locked")));
            Assert.IsAssignableFrom<SidecarExitedBeforeHandshakeException>(e);
            Assert.Equal(3, e.ExitCode);
            Assert.Contains("state dir lock (fake)", e.StderrTail);
        }

        [Theory]
        [InlineData("wrong-sidecar", "not a game-sidecar handshake")]
        [InlineData("wrong-protocol", "unsupported protocol 2")]
        public async Task MalformedHandshakeNamesWhyAndLeavesNoProcess(string mode, string why)
        {
            var e = await Assert.ThrowsAsync<SidecarMalformedHandshakeException>(
                () => SidecarProcess.LaunchAsync(TestEnv.FakeOptions(mode)));
            Assert.Contains(why, e.Message);
            Assert.False(string.IsNullOrEmpty(e.Line));
            // The fake sleeps 60 s after its bad line; the launcher must have killed it.
            Assert.NotNull(e.ProcessId);
            Assert.False(TestEnv.Alive(e.ProcessId!.Value));
        }

        // docs/protocol.md §1: the handshake is the first stdout line that is one; a line
        // that is not (stderr merged into stdout puts log lines there) is skipped, so a
        // program that prints one and then nothing times out, the line in the tail.
        [Fact]
        public async Task AGarbageLineIsSkippedAndKeptInTheTail()
        {
            var e = await Assert.ThrowsAsync<SidecarHandshakeTimeoutException>(
                () => SidecarProcess.LaunchAsync(TestEnv.FakeOptions("garbage", TimeSpan.FromMilliseconds(500))));
            Assert.Contains("this is not json", e.StderrTail);
            Assert.False(TestEnv.Alive(e.ProcessId!.Value));
        }

        // Unreal's usual CreateProc merges stderr into stdout: log lines come first on the
        // handshake's pipe, reach OnLog, and the launch works.
        [Fact]
        public async Task LogLinesBeforeTheHandshakeAreSkippedAndLogged()
        {
            var logs = new List<string>();
            var options = TestEnv.FakeOptions("log-first");
            options.OnLog = line => { lock (logs) logs.Add(line); };
            await using var sidecar = await SidecarProcess.LaunchAsync(options);
            Assert.Equal("127.0.0.1:9", sidecar.Handshake.Address);
            lock (logs)
            {
                Assert.Equal(5, logs.Count);
                Assert.Equal("{\"ts\": 1.0, \"level\": \"info\", \"msg\": \"starting 1\", \"logger\": \"fake\"}", logs[0]);
            }
        }

        // Past the bound (200 lines / 64 KiB) a program printing only other lines is no
        // sidecar: refused at once, not at the timeout, and killed.
        [Fact]
        public async Task OnlyOtherLinesPastTheBoundIsNotASidecar()
        {
            var e = await Assert.ThrowsAsync<SidecarMalformedHandshakeException>(
                () => SidecarProcess.LaunchAsync(TestEnv.FakeOptions("log-forever", TimeSpan.FromSeconds(60))));
            Assert.Contains("not a game-sidecar: no handshake line within the first 200 lines / 65536 bytes", e.Message);
            Assert.Equal("{\"ts\": 1.0, \"level\": \"info\", \"msg\": \"line 201\"}", e.Line);
            Assert.False(TestEnv.Alive(e.ProcessId!.Value));
        }

        [Fact]
        public async Task SilenceTimesOutWithTheStderrTail()
        {
            var e = await Assert.ThrowsAsync<SidecarHandshakeTimeoutException>(
                () => SidecarProcess.LaunchAsync(TestEnv.FakeOptions("silent", TimeSpan.FromMilliseconds(500))));
            Assert.Contains("loading something slow (fake)", e.StderrTail);
            Assert.Equal(TimeSpan.FromMilliseconds(500), e.Timeout);
            Assert.False(TestEnv.Alive(e.ProcessId!.Value));
        }

        [Fact]
        public async Task MissingExecutableIsALaunchError()
        {
            var options = TestEnv.FakeOptions("x");
            options.Executable = "/nonexistent/game-sidecar";
            var e = await Assert.ThrowsAsync<SidecarLaunchException>(() => SidecarProcess.LaunchAsync(options));
            Assert.Contains("/nonexistent/game-sidecar", e.Message);
        }

        [Fact]
        public async Task MagicAndAFreshTokenReachTheChildAndStderrReachesTheLog()
        {
            var logs = new List<string>();
            var options = TestEnv.FakeOptions("env");
            options.Environment["FAKE_EXTRA"] = "42";
            options.Environment[SidecarProcess.TokenEnv] = "must-not-win";
            options.OnLog = line => { lock (logs) logs.Add(line); };
            await using var first = await SidecarProcess.LaunchAsync(options);
            await using var second = await SidecarProcess.LaunchAsync(options);
            Assert.Equal(64, first.Token.Length);
            Assert.NotEqual(first.Token, second.Token);
            Assert.True(await TestEnv.Eventually(() => { lock (logs) return logs.Count == 2; }));
            lock (logs)
            {
                Assert.Contains($"magic=game-sidecar-v1 token={first.Token} extra=42", logs);
                Assert.Contains($"magic=game-sidecar-v1 token={second.Token} extra=42", logs);
            }
        }

        [Fact]
        public async Task StopClosesStdinAndTheSidecarExitsByItself()
        {
            var sidecar = await SidecarProcess.LaunchAsync(TestEnv.FakeOptions("until-eof"));
            var exit = await sidecar.StopAsync();
            Assert.Equal(SidecarExitKind.Exited, exit.Kind);
            Assert.Equal(0, exit.ExitCode);
            Assert.Contains("stdin closed, bye (fake)", sidecar.StderrTail());
            Assert.Equal(exit, await sidecar.StopAsync()); // idempotent
        }

        [Fact]
        public async Task ALiveSidecarNeverLooksDead()
        {
            // The probe after a broken call asks LooksDead whether an exit record is coming. It reads
            // /proc on Linux; on Windows that path is on the current drive, which under Wine is the
            // Linux root, so a live sidecar "looked dead" there (and the probe waited 10 s for a reap).
            var instance = await SidecarInstance.StartAsync(TestEnv.FakeOptions("until-eof"), CancellationToken.None);
            Assert.False(instance.LooksDead());
            var exit = await instance.StopAsync(TimeSpan.FromSeconds(5), killNow: false);
            Assert.Equal(0, exit.ExitCode);
            Assert.True(await TestEnv.Eventually(() => !TestEnv.Alive(instance.Pid)));
            // Reaped: gone from /proc on Linux; Windows has no such record and answers false.
            Assert.Equal(!TestEnv.IsWindows, instance.LooksDead());
        }

        [Fact]
        public async Task ASidecarThatIgnoresEofIsKilledAfterTheGrace()
        {
            var options = TestEnv.FakeOptions("ignore-eof");
            options.ExitGrace = TimeSpan.FromMilliseconds(200);
            var sidecar = await SidecarProcess.LaunchAsync(options);
            var pid = sidecar.Pid;
            var exit = await sidecar.StopAsync();
            Assert.Equal(SidecarExitKind.Killed, exit.Kind);
            Assert.False(TestEnv.Alive(pid));
        }
    }
}
