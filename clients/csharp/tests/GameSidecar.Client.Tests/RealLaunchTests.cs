// Launches of the real sidecar that need a process of their own: TCP loopback,
// a proxy in the game's environment, the magic check, the orderly stop.
using System.Collections.Generic;
using System.IO;
using System.Net;
using System.Net.Http;
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
            Assert.Equal(TestEnv.ServingPid(sidecar.Pid), info.Pid);
        }

        [Fact]
        public async Task AProxyInTheGamesEnvironmentIsNotUsedForTheSidecar()
        {
            // HttpClient.DefaultProxy is what HTTP_PROXY / http_proxy set; a dead one here. Process-wide,
            // so restored after; the library's own handlers never consult it, so other tests are unaffected.
            var tcp = TestEnv.RealOptions();
            tcp.Arguments.Add("--listen");
            tcp.Arguments.Add("tcp://127.0.0.1:0");
            await using var overTcp = await SidecarProcess.LaunchAsync(tcp);
            await using var overUnix = await SidecarProcess.LaunchAsync(TestEnv.RealOptions());
            var previous = HttpClient.DefaultProxy;
            HttpClient.DefaultProxy = new WebProxy("http://127.0.0.1:9");
            try
            {
                foreach (var sidecar in new[] { overTcp, overUnix })
                {
                    // A client made now, after the proxy is set (the launcher's own was made before).
                    using var client = new SidecarClient(sidecar.Handshake, sidecar.Token);
                    Assert.Equal(TestEnv.ServingPid(sidecar.Pid), (await client.GetInfoAsync()).Pid);
                }
            }
            finally
            {
                HttpClient.DefaultProxy = previous;
            }
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
            // On Windows the default transport is TCP loopback: there is no socket file to remove.
            Assert.Equal(TestEnv.IsWindows ? "tcp" : "unix", sidecar.Handshake.Transport);
            Assert.Equal(!TestEnv.IsWindows, File.Exists(socket));
            var exit = await sidecar.StopAsync();
            Assert.Equal(SidecarExitKind.Exited, exit.Kind);
            Assert.Equal(0, exit.ExitCode);
            Assert.False(File.Exists(socket));
        }
    }
}
