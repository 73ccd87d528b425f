// No orphan when the game crashes: a stand-in game (HostHelper) launches the real
// sidecar through the C# launcher and is SIGKILLed; the sidecar's own watchdog
// (stdin EOF, parent gone) must end it.
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
            var helper = TestEnv.Here("HostHelper.dll");
            Assert.True(File.Exists(helper), helper);
            var info = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, UseShellExecute = false };
            foreach (var arg in new[] { helper, TestEnv.SidecarExe, "serve", "--config", TestEnv.Config }) info.ArgumentList.Add(arg);
            using var host = Process.Start(info)!;
            var line = await host.StandardOutput.ReadLineAsync();
            Assert.NotNull(line);
            Assert.StartsWith("sidecar_pid=", line);
            var sidecar = int.Parse(line!.Substring("sidecar_pid=".Length));
            var socketLine = await host.StandardOutput.ReadLineAsync();
            Assert.StartsWith("socket=", socketLine);
            var socketDir = Path.GetDirectoryName(socketLine!.Substring("socket=".Length))!;
            Assert.True(TestEnv.Alive(sidecar));

            host.Kill(); // SIGKILL: nothing in the host runs, no DisposeAsync
            await host.WaitForExitAsync();
            Assert.True(await TestEnv.Eventually(() => !TestEnv.Alive(sidecar)), $"sidecar {sidecar} outlived its host");
            // Nobody is left to clean up after it: the sidecar removes its own socket folder on the way out.
            Assert.True(await TestEnv.Eventually(() => !Directory.Exists(socketDir)), $"{socketDir} left behind");
        }
    }
}
