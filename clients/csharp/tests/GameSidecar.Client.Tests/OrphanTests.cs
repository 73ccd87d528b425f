// No orphan when the game crashes: a stand-in game (HostHelper) launches the real
// sidecar through the C# launcher and is SIGKILLed; the sidecar's own watchdog
// (stdin EOF, parent gone) must end it. On Windows the stand-in is HostHelper.exe and
// the sidecar is the relay (tests/wine/sidecar_relay.c), whose stdin EOF or
// --parent-pid watch ends the Linux sidecar behind it.
using System.Diagnostics;
using System.IO;
using System.Threading.Tasks;
using Xunit;

namespace GameSidecar.Client.Tests
{
    public class OrphanTests
    {
        [Fact]
        public async Task TheSidecarExitsWhenTheHostProcessIsKilled()
        {
            using var host = Process.Start(TestEnv.HostHelper(TestEnv.SidecarExe, "serve", "--config", TestEnv.Config))!;
            var line = await host.StandardOutput.ReadLineAsync();
            Assert.NotNull(line);
            Assert.StartsWith("sidecar_pid=", line);
            var sidecar = int.Parse(line!.Substring("sidecar_pid=".Length));
            var socketLine = await host.StandardOutput.ReadLineAsync();
            Assert.StartsWith("socket=", socketLine);
            var address = socketLine!.Substring("socket=".Length);
            Assert.True(TestEnv.Alive(sidecar));

            host.Kill(); // SIGKILL (TerminateProcess on Windows): nothing in the host runs, no DisposeAsync
            await host.WaitForExitAsync();
            Assert.True(await TestEnv.Eventually(() => !TestEnv.Alive(sidecar)), $"sidecar {sidecar} outlived its host");
            // Nobody is left to clean up after it: the sidecar removes its own socket folder on the way out
            // (Windows: TCP loopback, no folder).
            if (!TestEnv.IsWindows)
            {
                var socketDir = Path.GetDirectoryName(address)!;
                Assert.True(await TestEnv.Eventually(() => !Directory.Exists(socketDir)), $"{socketDir} left behind");
            }
            else
            {
                Assert.StartsWith("127.0.0.1:", address);
            }
        }
    }
}
