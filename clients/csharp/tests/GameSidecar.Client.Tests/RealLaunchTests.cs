// Launches of the real sidecar that need a process of their own: TCP loopback,
// the magic check, the orderly stop.
using System.Collections.Generic;
using System.IO;
using System.Threading.Tasks;
using GameSidecar.Client;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class RealLaunchTests
    {
        [Fact]
        public async Task HandshakeOverLoopbackTcpThenGetInfo()
        {
            var options = TestEnv.RealOptions();
            options.Arguments.Add("--listen");
            options.Arguments.Add("tcp://127.0.0.1:0");
            await using var sidecar = await SidecarProcess.LaunchAsync(options);
            Assert.Equal("tcp", sidecar.Handshake.Transport);
            Assert.StartsWith("127.0.0.1:", sidecar.Handshake.Target);
            var info = await sidecar.Client.GetInfoAsync();
            Assert.Equal(sidecar.Pid, info.Pid);
        }

        [Fact]
        public async Task WithoutTheMagicTheSidecarRefusesWithExitCode2()
        {
            var options = TestEnv.RealOptions();
            options.Environment = new Dictionary<string, string> { [SidecarProcess.MagicEnv] = "not-the-magic" };
            var e = await Assert.ThrowsAsync<SidecarExitedBeforeHandshakeException>(() => SidecarProcess.LaunchAsync(options));
            Assert.Equal(2, e.ExitCode);
            Assert.Contains(SidecarProcess.MagicEnv, e.StderrTail);
        }

        [Fact]
        public async Task StopIsOrderlyAndRemovesTheSocket()
        {
            var sidecar = await SidecarProcess.LaunchAsync(TestEnv.RealOptions());
            var socket = sidecar.Handshake.Address;
            Assert.True(File.Exists(socket));
            var exit = await sidecar.StopAsync();
            Assert.Equal(SidecarExitKind.Exited, exit.Kind);
            Assert.Equal(0, exit.ExitCode);
            Assert.False(File.Exists(socket));
        }
    }
}
